/**
 * A fixed budget of same-size buffers that responses borrow and give back once the socket is done
 * with them. Buffers are allocated on first demand and kept for the next borrower: the budget is
 * both the most they can take together and the most that stays allocated after a burst. (Keeping
 * fewer made responses that borrow and give back often allocate 1 MiB Buffers over and over,
 * garbage V8 collects only after 64 MiB of it: pull-8x peaked at 128 MiB instead of 92.)
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private lent = 0;

  constructor(
    readonly size: number,
    readonly capacity: number,
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
    this.free.push(...buffers);
  }
}
