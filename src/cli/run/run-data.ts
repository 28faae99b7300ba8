import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HeldLease, LeaseData, LeaseStore } from '../../index.js';
import { LIMITS } from '../../index.js';

/**
 * The lease data of `leasehold run`, through a file: the command finds the previous value in the
 * file named by LEASEHOLD_DATA_FILE (and, when it is text, in LEASEHOLD_DATA), and whatever it
 * leaves there is written back under the lease's token: on each renewal when it changed, and with
 * the release. A cron job resumes where its last run stopped, in any language.
 */
export class RunData {
  private readonly dir: string;
  readonly file: string;
  /** The last value the store has from us (or the grant's), to write only changes. */
  private last: Buffer;
  /** The size of the last over-limit file warned about. */
  private overSize: number | undefined;

  private constructor(
    private readonly held: HeldLease,
    private readonly say: (line: string) => void,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'leasehold-run-'));
    this.file = join(this.dir, 'data');
    this.last = toBuffer(held.data);
    writeFileSync(this.file, this.last, { mode: 0o600 });
  }

  /** The file for `held`, or `undefined` on a store without lease data. */
  static for(held: HeldLease, store: LeaseStore, say: (line: string) => void): RunData | undefined {
    return store.capabilities.data ? new RunData(held, say) : undefined;
  }

  /** LEASEHOLD_DATA_FILE, and LEASEHOLD_DATA when the previous value is text. */
  env(): Record<string, string> {
    const data = this.held.data;
    return {
      LEASEHOLD_DATA_FILE: this.file,
      ...(typeof data === 'string' && !data.includes('\u0000') ? { LEASEHOLD_DATA: data } : {}),
    };
  }

  /** On a renewal: writes the file's content under the token if it changed. */
  async sync(): Promise<void> {
    const next = this.changed();
    if (next === undefined || !this.held.isValid()) return;
    try {
      await this.held.writeData(next.data);
      this.last = next.bytes;
    } catch (error) {
      this.say(`leasehold: warning: could not write the lease data: ${message(error)}`);
    }
  }

  /** The value to release with: the file's content if it changed, else `undefined`. */
  final(): LeaseData | undefined {
    return this.changed()?.data;
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private changed(): { data: LeaseData; bytes: Buffer } | undefined {
    let bytes: Buffer;
    try {
      // The size first: a command that left a huge file must not hold the loop while it is read.
      const size = statSync(this.file).size;
      if (size > LIMITS.dataMaxBytes) {
        if (this.overSize !== size)
          this.say(
            `leasehold: warning: LEASEHOLD_DATA_FILE holds ${size} bytes, over the limit of ${LIMITS.dataMaxBytes} (LIMITS.dataMaxBytes); not written`,
          );
        this.overSize = size; // said once per change of size
        return undefined;
      }
      bytes = readFileSync(this.file);
    } catch (error) {
      this.say(`leasehold: warning: cannot read LEASEHOLD_DATA_FILE: ${message(error)}`);
      return undefined;
    }
    if (bytes.equals(this.last)) return undefined;
    const text = bytes.toString('utf8');
    // Text when the bytes are UTF-8 (they read back the same), else bytes as they are.
    const data = Buffer.from(text, 'utf8').equals(bytes) ? text : new Uint8Array(bytes);
    return { data, bytes };
  }
}

function toBuffer(data: LeaseData | null): Buffer {
  if (data === null) return Buffer.alloc(0);
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
