import type { HeldLease, LeaseClient } from '../../src/index.js';
import { checkRecords } from '../../src/cli/harness/checker.js';
import type { BeliefRecord } from '../../src/cli/harness/history-format.js';
import { violationLines } from '../../src/cli/harness/violation-lines.js';
import { sleep } from './expect-error.js';

/** A time a holder believed it held `resource` with `token`, on one monotonic clock. */
export interface Tenure {
  resource: string;
  owner: string;
  token: number;
  start: number;
  end: number;
  /** How it ended (`released`, `abandoned`, ...), when known. */
  how?: string;
}

/** What demo and verify's checker finds in a list of tenures. */
export interface Verdict {
  /** Two owners of one resource at once, and tokens that do not rise from holder to holder. */
  violations: string[];
  /** Times a resource passed from one owner to another. */
  handovers: number;
  /** The most owners of one name (a counting lease's permits together) believing at one instant. */
  mostOwners: number;
}

/** Checks tenures with the checker demo and verify use, as beliefs of a history. */
export function checkTenures(tenures: readonly Tenure[]): Verdict {
  const beliefs = tenures.map((t): BeliefRecord => ({
    type: 'belief',
    resource: t.resource,
    owner: t.owner,
    token: t.token,
    from: t.start,
    to: t.end,
    how: t.how ?? 'released',
  }));
  const result = checkRecords(beliefs);
  return {
    violations: violationLines(result),
    handovers: result.handovers,
    mostOwners: result.mostOwners,
  };
}

/** Overlapping tenures of one resource, and tokens that do not rise with each new tenure. */
export function violations(tenures: readonly Tenure[]): string[] {
  return checkTenures(tenures).violations;
}

/** Workers contending for resources, each tenure recorded; `stop` ends them. */
export interface Contenders {
  /** Ends the workers once their current tenure is over; answers how many acquires failed. */
  stop(): Promise<{ failures: number }>;
}

/**
 * One worker per owner, on its own `clientFor(owner)`: it tries random `resources`, holds each one
 * it gets for 30–180 ms (its tenure ends there, or at the lease's deadline if earlier), releases it
 * and records the tenure in `tenures`, until `stop`. A failed acquire (the store unreachable for a
 * moment) is counted and tried again.
 */
export function contend(
  owners: readonly string[],
  clientFor: (owner: string) => Promise<LeaseClient>,
  resources: readonly string[],
  tenures: Tenure[],
): Contenders {
  let running = true;
  let failures = 0;
  const worker = async (owner: string): Promise<void> => {
    const c = await clientFor(owner);
    while (running) {
      const resource = resources[Math.floor(Math.random() * resources.length)]!;
      let held: HeldLease | null;
      try {
        held = await c.tryAcquire(resource);
      } catch {
        failures++;
        await sleep(50);
        continue;
      }
      if (!held) {
        await sleep(10);
        continue;
      }
      const start = performance.now();
      await sleep(30 + Math.random() * 150);
      const end = Math.min(performance.now(), held.validUntil);
      tenures.push({ resource, owner, token: held.token, start, end });
      await held.release().catch(() => {}); // a failed release lapses at its TTL
    }
  };
  const workers = owners.map(worker);
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      return { failures };
    },
  };
}
