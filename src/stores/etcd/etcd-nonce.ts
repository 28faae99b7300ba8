import { randomBytes } from 'node:crypto';

/**
 * Values that tell one acquire's write of a token key from every other, so that an acquire the
 * driver sent twice recognises its own earlier landing: 8 random bytes drawn once per generator
 * (one per store), then the count of nonces it gave out, both in hex: 32 ASCII characters
 * (`NONCE_LENGTH`). Unique within a store by the count, and between stores (processes) unless 64
 * random bits collide; one random draw per acquire would cost more than building the whole
 * transaction.
 */
export class Nonces {
  private readonly prefix = randomBytes(8).toString('hex');
  private count = 0;

  next(): string {
    return this.prefix + (++this.count).toString(16).padStart(16, '0');
  }
}
