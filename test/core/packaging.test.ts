import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';

// What a user of the published package sees: the built `dist` (tests run after `npm run build`),
// reached through the package's `exports` from a project of its own.
const ROOT = join(import.meta.dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, timeout = 20_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let project: ReturnType<typeof tempDir>;
beforeAll(() => {
  project = tempDir('leasehold-consumer-');
  mkdirSync(join(project.path, 'node_modules'));
  symlinkSync(ROOT, join(project.path, 'node_modules/leasehold'), 'dir');
});
afterAll(() => project.cleanup());

describe('the package from another project', () => {
  it('loads with import', async () => {
    const script = `
      const { LeaseClient } = await import('leasehold');
      const { ManualClock } = await import('leasehold/testing');
      console.log(typeof LeaseClient, typeof ManualClock);`;
    const result = await run(process.execPath, ['--input-type=module', '-e', script], project.path);
    expect(result).toMatchObject({ code: 0, stdout: 'function function\n' });
  });

  it('loads with require() where Node can require ES modules, and says why where it cannot', async () => {
    const script = `
      const { LeaseClient } = require('leasehold');
      const { ManualClock } = require('leasehold/testing');
      console.log(typeof LeaseClient, typeof ManualClock);`;
    const result = await run(
      process.execPath,
      ['--input-type=commonjs', '-e', script],
      project.path,
    );
    // Never the misleading "no exports" error of a package without a require-able condition.
    expect(result.stderr).not.toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
    if (process.features.require_module) {
      expect(result).toMatchObject({ code: 0, stdout: 'function function\n' });
    } else {
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('ERR_REQUIRE_ESM');
    }
  });

  it('type-checks against the published declarations, which hold no client bookkeeping', async () => {
    writeFileSync(
      join(project.path, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2024', 'ESNext.Disposable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [join(ROOT, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['check.mts'],
      }),
    );
    writeFileSync(
      join(project.path, 'check.mts'),
      `import { elect, HeldLease, LeaseManager, MemoryStore, openStore, type LeaseState } from 'leasehold';
import { ManualClock } from 'leasehold/testing';

export async function use(lease: HeldLease): Promise<void> {
  const facts: [string, string, number, number, number, LeaseState, boolean, number] = [
    lease.resource, lease.owner, lease.token, lease.expiresAt, lease.validUntil,
    lease.state, lease.isValid(), lease.remainingMs(),
  ];
  void facts;
  lease.signal.throwIfAborted();
  lease.on('lost', (error) => void error.code);
  await lease.renew();
  await lease.release();
  void (lease instanceof HeldLease);

  // @ts-expect-error the client's bookkeeping is not part of the public type
  lease.markRenewed(lease.lease, 0);
  // @ts-expect-error
  lease.markAtRisk('x');
  // @ts-expect-error
  lease.markLost('x');
  // @ts-expect-error
  lease.markReleased();
  // @ts-expect-error
  lease.revoke('x');
  // @ts-expect-error
  lease.failing = true;
  // @ts-expect-error
  void lease.lastSentAt;
  // @ts-expect-error
  void lease.isTerminal;
  // @ts-expect-error only a LeaseClient makes these
  void HeldLease.grant;
  // @ts-expect-error
  void new HeldLease();
}

export async function dispose(): Promise<void> {
  const clock = new ManualClock();
  await using store = new MemoryStore({ clock });
  await using opened = await openStore('memory:');
  await using manager = new LeaseManager({ store, resources: [] });
  await using election = elect({ store: opened, name: 'x', onElected: () => undefined });
  void [manager, election];
}
`,
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    // A whole type-check of the declarations and @types/node: slow on a loaded machine.
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], project.path, 80_000);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  }, 90_000);
});

describe('the packed tarball', () => {
  it('ships the license and every file its manifest names, and no source maps', async () => {
    const result = await run(
      'npm',
      ['pack', '--dry-run', '--json', '--ignore-scripts', '--silent'],
      ROOT,
    );
    expect(result.code, result.stderr).toBe(0);
    const [pack] = JSON.parse(result.stdout) as [{ files: { path: string }[] }];
    const files = new Set(pack.files.map((f) => f.path));
    expect(files).toContain('LICENSE');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      license: string;
      main: string;
      types: string;
      bin: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    expect(manifest.license).toBe('MIT');
    const named = [
      manifest.main,
      manifest.types,
      ...Object.values(manifest.bin),
      ...Object.values(manifest.exports).flatMap((e) =>
        typeof e === 'string' ? [e] : Object.values(e),
      ),
    ];
    for (const path of named) expect(files, path).toContain(path.replace(/^\.\//, ''));
    expect([...files].filter((f) => f.endsWith('.map'))).toEqual([]);
    // No emitted file points at a map (or at sources) the package does not ship.
    expect(readFileSync(join(ROOT, 'dist/index.js'), 'utf8')).not.toContain('sourceMappingURL');
  });
});
