/**
 * Sizes the batches a store sends by how much lease data its records carried lately, so that one
 * reply never brings back more than about `budgetBytes` of data to decode in one go (design rule
 * 6: a reply of 10,000 records carrying 4 KiB each held the event loop about 100 ms on PostgreSQL).
 * Records without data cost nothing here: a store that has seen no data sends a batch whole.
 */
export class ReplySizer {
  /** Bytes of data per record, averaged over recent replies. */
  private perRecord = 0;

  constructor(
    private readonly budgetBytes = 256 * 1024,
    private readonly minRecords = 64,
  ) {}

  /** A reply of `records` records carried `dataBytes` of data in all. */
  observe(dataBytes: number, records: number): void {
    if (records === 0) return;
    const seen = dataBytes / records;
    // Quick to grow (one big reply is what stalls), slower to shrink.
    this.perRecord = seen >= this.perRecord ? seen : 0.5 * this.perRecord + 0.5 * seen;
  }

  /** How many of `count` records to ask for in one call. */
  records(count: number): number {
    if (this.perRecord * count <= this.budgetBytes) return count;
    return Math.min(
      count,
      Math.max(this.minRecords, Math.floor(this.budgetBytes / this.perRecord)),
    );
  }
}

/** What a value of lease data costs to decode, roughly in bytes (a string counts twice). */
export function dataSize(data: string | Uint8Array | null | undefined): number {
  if (data == null) return 0;
  return typeof data === 'string' ? 2 * data.length : data.byteLength;
}
