import { Option, type Command } from 'commander';
import {
  ErrorCode,
  LeaseClient,
  LeaseError,
  LIMITS,
  isLeaseError,
  type LeaseStore,
} from '../../index.js';
import { durationOption, formatDuration } from '../duration.js';
import { expiresText, fields, viewRecord } from '../format.js';
import { CliFailure, print, printJson } from '../output.js';
import {
  requireShared,
  storeUrl,
  withCommonOptions,
  withStore,
  type StoreOptions,
} from '../store.js';
import { hasUnsafe, quoted, visible } from '../escape.js';
import { integerOption } from '../numbers.js';
import { acquireSayingWait } from '../waiting.js';
import { permitsUnavailable } from './permits-held.js';

interface AcquireOptions extends StoreOptions {
  owner: string;
  ttl: number;
  wait: number;
  permits: number;
}

export function registerAcquire(program: Command): void {
  withCommonOptions(
    program
      .command('acquire')
      .addHelpText(
        'after',
        `\nExamples:\n  leasehold acquire nightly-report --owner ops --ttl 10m\n  leasehold acquire deploy --owner ci-42 --ttl 5m --wait 2m   # waits while another owner holds it\n  leasehold acquire job --owner me || echo "exit $?"   # 75: held by another owner\n  leasehold acquire vendor-api --permits 5 --owner w1  # one of 5 permits; prints which`,
      )
      .description(
        'acquire a lease and exit without releasing it: it lapses at its TTL unless released with "leasehold release"',
      )
      .argument('<resource>', 'the resource name')
      .requiredOption('--owner <id>', 'who holds the lease (a worker or node id)')
      .addOption(
        new Option('--ttl <duration>', 'how long the lease lasts')
          .argParser(durationOption(LIMITS.ttlMinMs, LIMITS.ttlMaxMs))
          .default(20_000, formatDuration(20_000)),
      )
      .addOption(
        new Option('--wait <duration>', 'keep trying this long while another owner holds it')
          .argParser(durationOption(0, LIMITS.ttlMaxMs))
          .default(0, 'try once'),
      )
      .addOption(
        new Option(
          '--permits <n>',
          'take one of n permits of the resource (at most n holders at once)',
        )
          .argParser(integerOption(1, LIMITS.permitsMax))
          .default(1),
      ),
  ).action((resource: string, options: AcquireOptions) =>
    withStore(
      requireShared(
        storeUrl(options),
        'a lease taken here would vanish when this command exits; use a store other processes share',
      ),
      async (store) => {
        // No heartbeat and never `client.close()`: closing would release the lease this command hands out.
        const client = new LeaseClient({
          store,
          owner: options.owner,
          ttlMs: options.ttl,
          autoRenew: false,
        });
        const { permits } = options;
        const held = await acquireOrExplain(client, store, resource, options.wait, permits);
        const { owner, token, expiresAt, ttlMs } = held.lease;
        const { permit } = held;
        if (options.json) {
          printJson({
            resource: held.key,
            name: resource,
            permit,
            ...(permits > 1 ? { permits } : {}),
            owner,
            token,
            expiresAt,
            ttlMs,
            clock: store.capabilities.clock,
          });
          return;
        }
        const view = viewRecord(held.lease, Date.now(), store.maxClockSkewMs);
        print(
          permits > 1
            ? `acquired permit ${permit} of ${quoted(resource)} (one of ${permits})`
            : `acquired ${quoted(resource)}`,
        );
        print(
          fields([
            ...(permits > 1
              ? [['permit', `${permit} (of ${permits}, numbered from 0)`] as [string, string]]
              : []),
            ['owner', visible(owner)],
            ['token', String(token)],
            [
              'expires',
              `${expiresText(view)}${store.capabilities.clock === 'store' ? " on the store's clock" : ''}`,
            ],
          ]),
        );
        print(
          `not released on exit: it lapses in ${formatDuration(ttlMs)} unless released with\n` +
            `  leasehold release ${shellWord(resource)}${permits > 1 ? ` --permit ${permit}` : ''} --owner ${shellWord(owner)} --token ${token}`,
        );
      },
    ),
  );
}

async function acquireOrExplain(
  client: LeaseClient,
  store: LeaseStore,
  resource: string,
  waitMs: number,
  permits: number,
) {
  const interrupt = new AbortController();
  const onSigint = (): void => interrupt.abort(new CliFailure('interrupted while waiting', 130));
  process.once('SIGINT', onSigint);
  try {
    return await acquireSayingWait(client, store, resource, waitMs, interrupt.signal, { permits });
  } catch (error) {
    if (!isLeaseError(error, ErrorCode.LEASE_UNAVAILABLE)) throw error;
    if (permits > 1) throw await permitsUnavailable(store, resource, permits, waitMs, error);
    const record = await store.get(resource);
    if (!record || record.owner === '') throw error;
    const view = viewRecord(record, Date.now(), store.maxClockSkewMs);
    const holder = `${quoted(record.owner)} with token ${record.token}, expiring ${expiresText(view)}`;
    const message =
      record.owner === client.owner
        ? `lease on ${quoted(resource)} is already held by ${holder}; release it or let it lapse first`
        : `lease on ${quoted(resource)} is held by ${holder}${waitMs > 0 ? ` (waited ${formatDuration(waitMs)})` : ''}`;
    throw new LeaseError(ErrorCode.LEASE_UNAVAILABLE, message, {
      resource,
      retryable: true,
      cause: error,
    });
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/**
 * The text as one shell word: quoted only when it needs to be, and as `$'…'` with escapes when it
 * holds characters a terminal would act on.
 */
export function shellWord(text: string): string {
  if (/^[A-Za-z0-9_.:/@%+=,-]+$/.test(text)) return text;
  if (hasUnsafe(text)) return `$'${visible(text).replace(/'/g, "\\'")}'`;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
