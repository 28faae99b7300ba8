import { randomBytes } from 'node:crypto';

/**
 * Values that tell one acquire's write of a token key from every other, so that an acquire the
 * driver sent twice recognises its own earlier landing: 8 random bytes drawn once per generator
 * (one per store), then the count of nonces it gave out. Unique within a store by the count,
 * and between stores (processes) unless 64 random bits collide; one random draw per acquire
 * would cost more than building the whole transaction.
 */
export class Nonces {
  private readonly prefix = randomBytes(8);
  private count = 0;

  next(): Buffer {
    const n = ++this.count;
    const out = Buffer.allocUnsafe(16);
    this.prefix.copy(out, 0);
    out.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 8);
    out.writeUInt32BE(n >>> 0, 12);
    return out;
  }
}
