/**
 * The soak's faults, one at a time: a berth instance killed whole with SIGKILL (its primary and
 * both workers, as a machine or container dies) and started again on its port; one worker killed
 * with SIGKILL (its primary starts it again); radosgw paused with SIGSTOP for a few seconds and
 * resumed with SIGCONT. Each is logged with its time span, which is what allows a 5xx or a cut
 * request (see classify()).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SoakCluster, Slot } from './cluster.js';
import type { Random } from './random.js';
import type { Exchange } from './wire.js';

export interface Fault {
  kind: 'instance-kill' | 'worker-kill' | 'store-pause';
  /** berth instance index (kills) */
  instance?: number;
  start: number;
  /** the end of the pause, or when the instance answered again */
  end: number;
}

/** 5xx answered by berth up to this long after a pause are still the pause's */
export const PAUSE_GRACE_MS = 5000;
/** a cut or a balancer 5xx whose request spans a kill, give or take this, is the kill's */
const KILL_SLACK_MS = 2000;

/** `kill` (an instance or worker kill) happened while `exchange` was in flight, give or take KILL_SLACK_MS */
export function killInFlight(kill: Fault, exchange: { start: number; end: number }): boolean {
  return exchange.start <= kill.start + KILL_SLACK_MS && exchange.end >= kill.start - KILL_SLACK_MS;
}

/** alive and not a zombie (orphaned workers are reaped by PID 1, perhaps later) */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function sigkill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

export class FaultInjector {
  readonly faults: Fault[] = [];
  /** the fault in progress (its end not known yet) */
  private current?: Fault;
  private paused?: number;

  constructor(
    private readonly cluster: SoakCluster,
    private readonly random: Random,
  ) {}

  /** injects faults until `until` (ms since the epoch), one every 6-14 s */
  async run(until: number, log: (line: string) => void): Promise<void> {
    // each kind once first (the quick ones first, so that a short run sees all three), then at random
    const first: Fault['kind'][] = ['store-pause', 'worker-kill', 'instance-kill'];
    while (Date.now() < until - 8000) {
      await sleep(this.random.int(6000, 14_000));
      if (Date.now() >= until - 8000) break;
      const pick = this.random.next();
      const kind = first.shift() ?? (pick < 0.45 ? 'instance-kill' : pick < 0.65 ? 'worker-kill' : 'store-pause');
      const slot = this.random.pick(this.cluster.slots);
      if (kind === 'instance-kill') await this.killInstance(slot, log);
      else if (kind === 'worker-kill') await this.killWorker(slot, log);
      else await this.pauseStore(this.random.int(2000, 5000), log);
    }
  }

  async killInstance(slot: Slot, log: (line: string) => void): Promise<void> {
    const victim = slot.process!;
    const pids = this.cluster.pids(slot);
    const fault = this.begin({ kind: 'instance-kill', instance: slot.index, start: Date.now(), end: 0 });
    for (const pid of pids) sigkill(pid);
    await victim.kill9();
    for (let i = 0; i < 200 && pids.some(running); i++) await sleep(25);
    slot.dead.push(victim);
    slot.process = undefined;
    await sleep(this.random.int(500, 3000));
    for (let attempt = 1; ; attempt++) {
      try {
        await this.cluster.start(slot);
        break;
      } catch (err) {
        if (attempt === 3) throw err;
        log(`fault: instance ${slot.index} did not start again (attempt ${attempt}): ${(err as Error).message.split('\n')[0]}`);
      }
    }
    this.finish(fault);
    log(`fault: instance ${slot.index} killed (SIGKILL to ${pids.join(', ')}), serving again after ${((fault.end - fault.start) / 1000).toFixed(1)} s`);
  }

  async killWorker(slot: Slot, log: (line: string) => void): Promise<void> {
    const [, ...workers] = this.cluster.pids(slot);
    if (workers.length === 0) return;
    const pid = this.random.pick(workers);
    const fault = this.begin({ kind: 'worker-kill', instance: slot.index, start: Date.now(), end: 0 });
    sigkill(pid);
    for (let i = 0; i < 200 && running(pid); i++) await sleep(25);
    // its primary starts it again; by then the others have served on
    await sleep(2000);
    this.finish(fault);
    log(`fault: a worker of instance ${slot.index} killed (SIGKILL to ${pid})`);
  }

  async pauseStore(ms: number, log: (line: string) => void): Promise<void> {
    const pid = this.cluster.rgwPid();
    const fault = this.begin({ kind: 'store-pause', start: Date.now(), end: 0 });
    this.paused = pid;
    process.kill(pid, 'SIGSTOP');
    try {
      await sleep(ms);
    } finally {
      this.resume();
    }
    this.finish(fault);
    log(`fault: radosgw (${pid}) paused for ${(ms / 1000).toFixed(1)} s`);
  }

  /** SIGCONT to a paused radosgw (also on the way out of a failed run) */
  resume(): void {
    if (this.paused === undefined) return;
    try {
      process.kill(this.paused, 'SIGCONT');
    } catch {
      // gone
    }
    this.paused = undefined;
  }

  private begin(fault: Fault): Fault {
    this.current = fault;
    return fault;
  }

  private finish(fault: Fault): void {
    fault.end = Date.now();
    this.faults.push(fault);
    this.current = undefined;
  }

  /** the faults with the one in progress, its end open */
  private all(): Fault[] {
    return this.current ? [...this.faults, { ...this.current, end: Infinity }] : this.faults;
  }

  /**
   * Why an exchange failed, if a fault explains it: a 5xx answered by berth only during a store
   * pause (plus PAUSE_GRACE_MS); a cut or HAProxy's own 5xx also when the request was in flight
   * while an instance or a worker was killed.
   */
  explain(exchange: Exchange): Fault | undefined {
    const overlaps = (f: Fault, from: number, to: number) => exchange.start <= to && exchange.end >= from;
    const byBerth = exchange.status !== undefined && exchange.servedBy !== undefined;
    return this.all().find((f) => (f.kind === 'store-pause' ? overlaps(f, f.start, f.end + PAUSE_GRACE_MS) : !byBerth && killInFlight(f, exchange)));
  }

  /**
   * A kill while the request was in flight (the same window as for a cut): HAProxy's retry-on may
   * then have sent it again to another instance, which answers for the killed one's work.
   */
  killDuring(exchange: { start: number; end: number }): Fault | undefined {
    return this.all().find((f) => f.kind !== 'store-pause' && killInFlight(f, exchange));
  }

  counts(): Record<Fault['kind'], number> {
    const out = { 'instance-kill': 0, 'worker-kill': 0, 'store-pause': 0 };
    for (const f of this.faults) out[f.kind]++;
    return out;
  }
}
