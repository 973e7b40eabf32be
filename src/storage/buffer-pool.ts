/**
 * A fixed budget of same-size buffers that responses borrow and give back once the socket is done
 * with them. Buffers are allocated on first demand; `keep` of those given back wait for the next
 * borrower, the others are left to the garbage collector, so a burst of concurrent pulls does not
 * leave the whole budget allocated.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private lent = 0;

  constructor(
    readonly size: number,
    readonly capacity: number,
    readonly keep: number,
  ) {}

  /** `count` buffers, or undefined when the budget has not that many left */
  take(count: number): Buffer[] | undefined {
    if (this.lent + count > this.capacity) return undefined;
    this.lent += count;
    return Array.from({ length: count }, () => this.free.pop() ?? Buffer.allocUnsafeSlow(this.size));
  }

  /** gives buffers back; nothing may still read or write them */
  give(buffers: Buffer[]): void {
    this.lent -= buffers.length;
    for (const buffer of buffers) if (this.free.length < this.keep) this.free.push(buffer);
  }
}
