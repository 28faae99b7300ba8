import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// One store template, checked on the source: every folder under src/stores/ (but aws/, shared by
// DynamoDB and S3) has the same roles, one meaning each. `<x>` is the folder, `<Name>` capitalised.
//
// index.ts        public exports: the store class, its options type, the driver types passed in
// open.ts         open<Name>(url: StoreUrl, options: StoreOpenOptions): Promise<<Name>Store>
// <x>-store.ts    the store class: opening, capabilities, watch, diagnose, close, error mapping; a
//                 DelegatingStore handing every operation to its transitions and batches (memory:
//                 a StoreBase that keeps its records itself)
// <x>-options.ts  the options type, frozen defaults, resolve<Name>Options
// <x>-url.ts      the store URL → target and options (memory: none)
// <x>-driver.ts   the structural driver types and the load…() function (memory: none)
// <x>-errors.ts   driver errors → LeaseError codes, the only match on them (memory: none)
// <x>-ops.ts      what the store sends: SQL, Lua scripts, request bodies (memory: none)
// <x>-record.ts   the record codec: stored form ⇄ LeaseRecord and its refusals (memory: none)
// <x>-watch.ts    the store's watch, exactly where its capabilities declare watch
// <x>-doctor.ts   diagnose()'s reading of the store's settings
//
// Any other file is a concern of the store's own, `<x>-<concern>.ts`, and defines none of the
// above. The concerns several stores have keep one meaning each (the classes of the first two are
// named alike, which a test below checks):
//
// <x>-transitions.ts  <Name>Transitions: the single-lease transitions a DelegatingStore hands on
// <x>-calls.ts        <Name>Calls: how one call reaches the server (deadline, statement, routing)
// <x>-list.ts         the paged reading of records behind `list`
// <x>-batch.ts        the batches (acquireMany, renewMany, releaseMany) beyond one transition
// <x>-connect.ts      the driver's client or connection made from the URL's target
// <x>-keys.ts         where a resource's record lives: keys or object names, and back
// <x>-schema.ts       setting up and migrating the tables a SQL store keeps
// <x>-group.ts, <x>-first.ts   all-or-nothing groups, and the first free of several candidates
// <x>-coalesce.ts     group commit of single-lease calls asked while one is on the wire
// <x>-wire.ts         the lean signed HTTP path beside the AWS SDK (stores/aws/aws-wire.ts)

const STORES_DIR = join(import.meta.dirname, '../../src/stores');

/** Folders under src/stores/ that hold no store: code the stores of this list share. */
const SHARED = ['aws'];

type Role =
  | 'index'
  | 'open'
  | 'store'
  | 'options'
  | 'url'
  | 'driver'
  | 'errors'
  | 'ops'
  | 'record'
  | 'watch'
  | 'doctor';

/** The file each role lives in. */
function roleFile(store: string, role: Role): string {
  return role === 'index' || role === 'open' ? `${role}.ts` : `${store}-${role}.ts`;
}

/** The roles every store has; `watch` is required where the capabilities declare it. */
const REQUIRED: readonly Role[] = [
  'index',
  'open',
  'store',
  'options',
  'url',
  'driver',
  'errors',
  'ops',
  'record',
  'doctor',
];

/**
 * Roles a store has nothing for. The memory store has no URL parameters of its own to parse (its
 * open.ts takes `memory:` as it is), no driver to load nor driver errors to map, sends nothing to
 * a server and keeps its records as the objects they are: no url, driver, errors, ops or record.
 */
const NOT_APPLICABLE: Readonly<Record<string, readonly Role[]>> = {
  memory: ['url', 'driver', 'errors', 'ops', 'record'],
};

/** Stores whose class keeps its records itself (a StoreBase, not a DelegatingStore). */
const KEEPS_ITS_RECORDS: readonly string[] = ['memory'];

/**
 * Operations a DelegatingStore routes in its own class, where some calls take StoreBase's
 * default: ZooKeeper takes a group too big for one packet member by member, NATS looks over many
 * candidates with one list.
 */
const ROUTED_HERE: Readonly<Record<string, readonly string[]>> = {
  zookeeper: ['doAcquireAll'],
  nats: ['doAcquireFirst'],
};

/** The roles named `<x>-<role>.ts`. */
const FIXED_SUFFIXES: readonly string[] = REQUIRED.filter(
  (role) => role !== 'index' && role !== 'open',
).concat('watch');

function capitalised(store: string): string {
  return store[0]!.toUpperCase() + store.slice(1);
}

function storeFolders(): string[] {
  return readdirSync(STORES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !SHARED.includes(entry.name))
    .map((entry) => entry.name)
    .sort();
}

function filesOf(folder: string): string[] {
  return readdirSync(join(STORES_DIR, folder))
    .filter((name) => name.endsWith('.ts'))
    .sort();
}

function read(folder: string, file: string): string {
  return readFileSync(join(STORES_DIR, folder, file), 'utf8');
}

/** `text` without its comments (so that prose naming a function is not taken for code). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/** Every `.ts` file under src/stores/, as `folder/file`. */
function allFiles(): string[] {
  return readdirSync(STORES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => filesOf(entry.name).map((file) => `${entry.name}/${file}`));
}

/**
 * Whether the store can watch, from its capabilities as its -store.ts declares them: `watch:`
 * anything but the literal `false` (PostgreSQL's follows its `notify` option). Read from the text,
 * so that nothing is opened; a store that declares it other than once fails the test.
 */
function declaresWatch(store: string): boolean {
  const declarations = [
    ...code(read(store, `${store}-store.ts`)).matchAll(/^\s*watch:\s*([^,\n]+),/gm),
  ];
  if (declarations.length !== 1)
    throw new Error(`${store}-store.ts declares capabilities.watch ${declarations.length} times`);
  return declarations[0]![1]!.trim() !== 'false';
}

/**
 * A definition of a record codec function (or an alias bound with `const`): `encodeRecord`,
 * `decodeRecord`, `toRecord`, `recordOf`, `redisRecord`, `decodeEntry`, `encodeEtcdData`, …
 */
const CODEC_DEFINITION =
  /^\s*(?:export\s+)?(?:async\s+)?(?:function\s*\*?\s*|const\s+)((?:encode|decode)\w*(?:Record|Entry|Data|Row|Token|Value)|to\w*Record|\w*Record|recordOf\w*)\b/gm;

/**
 * A match on a driver error's code, name or message: reading `code`, `name` or `errno` off a
 * caught error, testing its message against a pattern, or comparing a field to an error code
 * literal (`'ER_NO_SUCH_TABLE'`, `'42P01'`, `'ENOENT'`).
 */
const ERROR_MATCHES = [
  /\(\s*(?:error|err|e)\s+as\b[^;]*?\)\??\.(?:code|name|errno)\b/,
  /\.test\(\s*(?:String\()?\(?\s*(?:error|err|message)\b/,
  /\bmessage\)?\.(?:startsWith|endsWith|includes|match)\(/,
  /\b(?:code|name|errno)\s*[!=]==?\s*'[A-Z][A-Z0-9_]{3,}'/,
];

/** `text` on one line, as a signature reads whatever its line breaks: `f(a, b): T {`. */
function flat(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/,? \)/g, ')');
}

/** A dynamic `import()` of a package (not a relative module). */
const PACKAGE_IMPORT = /\bimport\(\s*['"][^.'"][^'"]*['"]\s*\)/;

describe('the store template', () => {
  const stores = storeFolders();

  it('finds the stores', () => {
    expect(stores).toEqual([
      'dynamodb',
      'etcd',
      'memory',
      'mysql',
      'nats',
      'postgres',
      'redis',
      's3',
      'sqlite',
      'zookeeper',
    ]);
  });

  it('gives every store folder its roles, and names every other file <x>-<concern>.ts', () => {
    const problems: string[] = [];
    for (const store of stores) {
      const files = filesOf(store);
      const exempt = NOT_APPLICABLE[store] ?? [];
      for (const role of REQUIRED) {
        const file = roleFile(store, role);
        if (!exempt.includes(role) && !files.includes(file))
          problems.push(`${store}/: no ${file} (${role})`);
      }
      for (const file of files) {
        if (file === 'index.ts' || file === 'open.ts') continue;
        if (!/^[a-z0-9]+-[a-z0-9-]+\.ts$/.test(file) || !file.startsWith(`${store}-`)) {
          problems.push(`${store}/${file}: not named ${store}-<role or concern>.ts`);
          continue;
        }
        // A concern is not a role under another spelling (`-records`, `-option`, `-group-ops`).
        const concern = file.slice(store.length + 1, -'.ts'.length);
        const near = FIXED_SUFFIXES.find((role) => {
          if (concern === role) return false;
          const spellings = [role, `${role}s`, role.replace(/s$/, '')];
          return spellings.some((name) => concern === name || concern.endsWith(`-${name}`));
        });
        if (near) problems.push(`${store}/${file}: the ${near} role is ${store}-${near}.ts`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('has a -watch.ts exactly in the stores whose capabilities declare watch', () => {
    const problems: string[] = [];
    for (const store of stores) {
      const watches = declaresWatch(store);
      const hasFile = existsSync(join(STORES_DIR, store, `${store}-watch.ts`));
      if (watches && !hasFile)
        problems.push(`${store}: declares watch but has no ${store}-watch.ts`);
      if (!watches && hasFile)
        problems.push(`${store}: has ${store}-watch.ts but declares no watch`);
      const implementsWatch =
        /^\s+watch\(prefix: string, listener: WatchListener\): Unwatch \{/m.test(
          read(store, `${store}-store.ts`),
        );
      if (implementsWatch !== watches)
        problems.push(
          `${store}: declares watch ${watches} but implements watch() ${implementsWatch}`,
        );
    }
    expect(problems).toEqual([]);
    // Both kinds are there, so the check above checks something either way.
    expect(stores.filter(declaresWatch).length).toBeGreaterThan(0);
    expect(stores.filter((store) => !declaresWatch(store)).length).toBeGreaterThan(0);
  });

  it('loads drivers only in -driver.ts', () => {
    const problems: string[] = [];
    for (const path of allFiles()) {
      const [folder, file] = path.split('/') as [string, string];
      const text = code(read(folder, file));
      const isDriver = file.endsWith('-driver.ts');
      if (/\bloadDriver\s*[<(]/.test(text) && !isDriver) problems.push(`${path} calls loadDriver`);
      if (!SHARED.includes(folder) && PACKAGE_IMPORT.test(text) && !isDriver)
        problems.push(`${path} imports a package at run time`);
    }
    expect(problems).toEqual([]);
    for (const store of stores) {
      if ((NOT_APPLICABLE[store] ?? []).includes('driver')) continue;
      expect(code(read(store, `${store}-driver.ts`)), store).toMatch(
        /^export (?:async )?function load\w*\(/m,
      );
    }
  });

  it('defines the StoreBase subclass only in -store.ts, one each, which only index.ts and open.ts import', () => {
    const problems: string[] = [];
    for (const path of allFiles()) {
      const [folder, file] = path.split('/') as [string, string];
      const text = code(read(folder, file));
      const subclasses = text.match(/\bextends (?:StoreBase|DelegatingStore)\b/g)?.length ?? 0;
      const isStore = file === `${folder}-store.ts`;
      if (isStore && subclasses !== 1) problems.push(`${path}: ${subclasses} StoreBase subclasses`);
      if (!isStore && subclasses > 0) problems.push(`${path} extends StoreBase`);
      if (
        file !== 'index.ts' &&
        file !== 'open.ts' &&
        new RegExp(`from '\\./${folder}-store\\.js'`).test(text)
      )
        problems.push(`${path} imports ${folder}-store.ts`);
    }
    expect(problems).toEqual([]);
  });

  it('hands every operation of a DelegatingStore to its transitions and batches', () => {
    const problems: string[] = [];
    for (const store of stores) {
      const text = code(read(store, `${store}-store.ts`));
      const delegates = /\bextends DelegatingStore\b/.test(text);
      if (!delegates && !KEEPS_ITS_RECORDS.includes(store))
        problems.push(`${store}-store.ts: not a DelegatingStore`);
      if (!delegates) continue;
      for (const [, name] of text.matchAll(/^ {2}protected (?:override )?(?:async )?(do\w+)\(/gm)) {
        if (name === 'doClose' || ROUTED_HERE[store]?.includes(name!)) continue;
        problems.push(`${store}-store.ts: ${name} (the store's transitions or batches do it)`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('names the transitions and calls classes alike in every store', () => {
    const problems: string[] = [];
    for (const store of stores) {
      for (const concern of ['transitions', 'calls']) {
        const file = `${store}-${concern}.ts`;
        if (!filesOf(store).includes(file)) continue;
        const wanted = `${capitalised(store)}${capitalised(concern)}`;
        if (!new RegExp(`^export class ${wanted}\\b`, 'm').test(read(store, file)))
          problems.push(`${store}/${file}: no exported class ${wanted}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('defines the record codec only in -record.ts', () => {
    const problems: string[] = [];
    for (const path of allFiles()) {
      const [, file] = path.split('/') as [string, string];
      if (file.endsWith('-record.ts')) continue;
      const text = code(read(...(path.split('/') as [string, string])));
      for (const match of text.matchAll(CODEC_DEFINITION)) problems.push(`${path}: ${match[1]}`);
    }
    expect(problems).toEqual([]);
    // Each -record.ts holds a codec by that naming, so the pattern above is the one in use.
    for (const store of stores) {
      if ((NOT_APPLICABLE[store] ?? []).includes('record')) continue;
      const defined = [...code(read(store, `${store}-record.ts`)).matchAll(CODEC_DEFINITION)];
      expect(defined.length, `${store}-record.ts`).toBeGreaterThan(0);
    }
  });

  it('matches on driver errors only in -errors.ts', () => {
    const problems: string[] = [];
    for (const store of stores) {
      for (const file of filesOf(store)) {
        if (file === `${store}-errors.ts`) continue;
        const lines = code(read(store, file)).split('\n');
        lines.forEach((line, i) => {
          if (ERROR_MATCHES.some((pattern) => pattern.test(line)))
            problems.push(`${store}/${file}:${i + 1}: ${line.trim()}`);
        });
      }
    }
    expect(problems).toEqual([]);
    for (const store of stores) {
      if ((NOT_APPLICABLE[store] ?? []).includes('errors')) continue;
      expect(read(store, `${store}-errors.ts`), store).toMatch(
        new RegExp(`^export function map${capitalised(store)}Error\\(`, 'm'),
      );
    }
  });

  it('gives every open.ts one export, open<Name>(url, options) of the common signature', () => {
    const opener = readFileSync(join(STORES_DIR, 'open-store.ts'), 'utf8');
    for (const store of stores) {
      const Name = capitalised(store);
      const text = code(read(store, 'open.ts'));
      expect(text.match(/^export\b/gm)?.length, `${store}/open.ts exports`).toBe(1);
      // `_options` where the store has no use for them (the linter's name for an unused one).
      expect(flat(text), `${store}/open.ts`).toMatch(
        new RegExp(
          `export async function open${Name}\\(url: StoreUrl, _?options: StoreOpenOptions = \\{\\}\\): Promise<${Name}Store> \\{`,
        ),
      );
      // openStore calls it as it calls every other.
      expect(flat(opener), `open-store.ts for ${store}`).toContain(
        `(await import('./${store}/open.js')).open${Name}(url, options)`,
      );
    }
  });

  it('keeps to index.ts the store class, its options type and the driver types', () => {
    for (const store of stores) {
      const Name = capitalised(store);
      const text = code(read(store, 'index.ts')).trim();
      const statements = text.split(/;\s*/).filter((s) => s.trim() !== '');
      const exported: { names: string[]; from: string; type: boolean }[] = [];
      for (const statement of statements) {
        const match = /^export (type )?\{([^}]*)\} from '\.\/([^']+)\.js'$/.exec(
          statement.replace(/\s+/g, ' ').trim(),
        );
        expect(match, `${store}/index.ts: ${statement}`).not.toBeNull();
        exported.push({
          type: match![1] !== undefined,
          names: match![2]!
            .split(',')
            .map((name) => name.trim())
            .filter(Boolean),
          from: match![3]!,
        });
      }
      // The class, by value, from the store file; nothing else by value.
      const values = exported.filter((e) => !e.type);
      expect(values, `${store}/index.ts`).toEqual([
        { type: false, names: [`${Name}Store`], from: `${store}-store` },
      ]);
      // Types only from the options and the driver, the options type among them.
      for (const e of exported.filter((e) => e.type))
        expect([`${store}-options`, `${store}-driver`], `${store}/index.ts`).toContain(e.from);
      const options = exported.find((e) => e.from === `${store}-options`);
      expect(options?.names, `${store}/index.ts`).toContain(`${Name}StoreOptions`);
    }
  });

  it('gives -options.ts the options type, frozen defaults and resolve<Name>Options', () => {
    for (const store of stores) {
      const Name = capitalised(store);
      const text = code(read(store, `${store}-options.ts`));
      expect(text, store).toContain(`export interface ${Name}StoreOptions {`);
      expect(text, store).toContain(
        `export const ${store.toUpperCase()}_DEFAULTS = Object.freeze(`,
      );
      expect(text, store).toMatch(new RegExp(`^export function resolve${Name}Options\\(`, 'm'));
    }
  });

  it('gives -url.ts parse<Name>Url and -doctor.ts diagnose<Name>', () => {
    for (const store of stores) {
      const Name = capitalised(store);
      if (!(NOT_APPLICABLE[store] ?? []).includes('url'))
        expect(code(read(store, `${store}-url.ts`)), store).toMatch(
          new RegExp(`^export function parse${Name}Url\\(\\w+: StoreUrl\\)`, 'm'),
        );
      expect(code(read(store, `${store}-doctor.ts`)), store).toMatch(
        new RegExp(`^export (?:async )?function diagnose${Name}\\(`, 'm'),
      );
    }
  });

  it('leaves the shared folders without a store of their own', () => {
    for (const folder of SHARED) {
      for (const file of filesOf(folder)) {
        expect(file, folder).toMatch(new RegExp(`^${folder}-[a-z0-9-]+\\.ts$`));
        expect(code(read(folder, file)), `${folder}/${file}`).not.toMatch(/\bextends StoreBase\b/);
      }
    }
  });
});
