import {
  checkUrlOptions,
  choiceParam,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './sqlite-options.js';

/** What a `sqlite:` URL names: the file (or `:memory:`) and the store's options. */
export interface SqliteTarget {
  readonly path: string;
  readonly options: SqliteStoreOptions;
}

const PARAMS = ['table', 'busyTimeoutMs', 'maxClockSkewMs', 'synchronous', 'watchPollMs'];

/**
 * `sqlite:PATH`, `sqlite::memory:`, `sqlite:///abs/path`, with
 * `?table=&busyTimeoutMs=&maxClockSkewMs=&synchronous=&watchPollMs=`. Every value is checked here,
 * before the file is opened.
 */
export function parseSqliteUrl(url: StoreUrl): SqliteTarget {
  let path = url.rest;
  if (path.startsWith('//')) {
    try {
      path = decodeURIComponent(path.slice(2));
    } catch (error) {
      throw urlError(url, 'a malformed %-escape in the path', { cause: error });
    }
  }
  if (path === '') {
    throw urlError(url, 'no path', {
      hint: 'a sqlite store URL needs a path, like sqlite:./leasehold.db or sqlite::memory:',
    });
  }
  const params = takeParams(url, PARAMS);
  const options: SqliteStoreOptions = {
    table: params.table,
    busyTimeoutMs: intParam(url, params, 'busyTimeoutMs'),
    maxClockSkewMs: intParam(url, params, 'maxClockSkewMs'),
    synchronous: choiceParam(url, params, 'synchronous', ['full', 'normal'] as const),
    watchPollMs: intParam(url, params, 'watchPollMs'),
  };
  checkUrlOptions(url, () => resolveSqliteOptions(options));
  return { path, options };
}
