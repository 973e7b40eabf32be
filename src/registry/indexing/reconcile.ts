/**
 * The reconciler (metadata.reconcile): a pass over storage that makes the index what storage
 * holds, repository by repository, so a write the index was not told of (a crash between the
 * storage write and the index write, a write by Distribution on a shared root, a pass of an
 * instance without the index) shows within one interval. It reuses the rebuild's reading
 * (facts.ts), comparison (verify-index.ts: a repository equal to its rows is not written) and
 * writing (MetadataIndex.replaceRepository, dropRepository).
 *
 * Incremental: a repository is read whole only when its fingerprint (a hash of what storage says
 * about its directories without reading a file, fingerprint.ts) differs from the one the index
 * keeps from the last read, the reconciler's or the rebuild's (metadata/storage-versions.ts).
 * Fingerprints are taken FINGERPRINT_BATCH repositories at a time, with their kept versions in
 * one query: on the filesystem in one call run by the driver's worker threads, so a pass over
 * 100,000 repositories queues none of a request's fs calls behind a million of its own in libuv's
 * pool (docs/performance.md, "The reconciler's pass at scale").
 * Memory: the names of the repositories (to find those the index has and storage no longer does)
 * and the repositories in progress; never the whole registry. A link whose content was missing at the last read is kept
 * with the fingerprint and checked on each pass (its content completed by another push changes no
 * directory of the repository). Every repository is also read whole (no fingerprint trusted) once
 * per FULL_PASS_MS, for what no repository directory shows otherwise: a blob's content deleted
 * under its `_layers` link, a configuration blob arriving after its manifest. The scheduled pass
 * spreads that full pass over the hour, a share per pass after a cursor kept in the index
 * (reconcileTask), so every pass costs about the same and none outlasts the interval because of
 * it: a Distribution write shows at the next pass.
 */
import type { Logger } from 'pino';
import { REBUILT_KEY, RepositoryChangedError, type MetadataIndex } from '../../metadata/metadata-index.js';
import { StorageVersions } from '../../metadata/storage-versions.js';
import type { Clock } from '../../scheduler/clock.js';
import type { PeriodicTask } from '../../scheduler/scheduler.js';
import { pathSortKey, type StorageDriver } from '../../storage/driver.js';
import { repositoryNames } from '../gc/repositories.js';
import { forEach, mapLimited } from '../pool.js';
import { sharedPass } from '../shared-schedule.js';
import { readRepositoryFacts } from './facts.js';
import { fingerprint, fingerprintAgain, fingerprints, keepFingerprint, stillKept, type Fingerprint } from './fingerprint.js';
import { inStorage } from './reindex.js';
import { compareRepository } from './verify-index.js';

/** repositories fingerprinted (one by one, or walked) and read at once */
export const RECONCILE_REPOSITORIES = 8;
/**
 * repositories whose fingerprints are taken together (on the filesystem one inspectDirectories
 * call: about 640 fs calls on a worker thread for repositories of ten tags), before any of them is read
 */
export const FINGERPRINT_BATCH = 64;
/** the scheduled pass rests this long per ms a batch took (rest below) */
export const REST_PER_BUSY = 1;
/** a pass that trusts no fingerprint, at most this often (index_state FULL_PASS_KEY) */
export const FULL_PASS_MS = 60 * 60_000;
/** index_state: when the last full pass started (ISO time); with the scheduled pass's shares, when the current round of them started */
export const FULL_PASS_KEY = 'reconciled-full';
/** index_state: how far the current round of shares got (JSON FullRound) */
export const FULL_ROUND_KEY = 'reconciled-full-round';

export interface ReconcileOptions {
  /** read every repository, whatever its fingerprint */
  full?: boolean;
  /**
   * read whole, whatever their fingerprints, the first `count` repositories after `after` (a
   * repository name; '' before the first) in the walk's order: a share of the full pass, which
   * the scheduled pass spreads over FULL_PASS_MS (reconcileTask)
   */
  share?: { after: string; count: number };
  signal?: AbortSignal;
  /** a repository that could not be reconciled (the pass goes on with the others) */
  failed?: (name: string, err: unknown) => void;
  /** the store's time, for fingerprint.ts's SETTLE_MS (default Date.now, as the filesystem driver's childrenVersion) */
  storeNow?: () => number;
  /** after each batch, with the ms it took: the scheduled pass rests (reconcileTask) */
  rest?: (busyMs: number) => Promise<void>;
}

export interface ReconcileSummary {
  /** repositories in storage */
  repositories: number;
  /** read whole (and written to the index where it differed) */
  read: number;
  /** of those read, differed from the index: written */
  written: number;
  /** unchanged since the last read: skipped */
  skipped: number;
  /** written to while being read: left to the next pass */
  deferred: number;
  /** in the index, no longer in storage: dropped */
  dropped: number;
  failed: number;
  /** of `share`: how many it took, the last of them, and whether it took every one after `after` (the round of shares is complete) */
  share?: { read: number; last: string; complete: boolean };
}

export async function reconcileIndex(driver: StorageDriver, index: MetadataIndex, options: ReconcileOptions = {}): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { repositories: 0, read: 0, written: 0, skipped: 0, deferred: 0, dropped: 0, failed: 0 };
  const versions = new StorageVersions(index.db);
  const storeNow = options.storeNow ?? Date.now;
  const seen = new Set<string>();
  const failed = (name: string, err: unknown) => {
    summary.failed++;
    options.failed?.(name, err);
  };

  /** one repository of a batch, its fingerprint taken before (or why it could not be); `whole`: read it whatever its fingerprint */
  const reconcile = async (name: string, before: Fingerprint | { error: unknown }, kept: string | undefined, whole: boolean): Promise<void> => {
    if ('error' in before) return failed(name, before.error);
    try {
      if (!whole && (await stillKept(driver, kept, before))) {
        summary.skipped++;
        return;
      }
      const changes = await index.changesOf(name);
      const facts = await readRepositoryFacts(driver, name);
      // a write landed while the repository was read: what was read may be older than what that
      // write told the index; the next pass reads it again
      if ((await fingerprintAgain(driver, name, before, storeNow)).version !== before.version) {
        await versions.forget(name);
        summary.deferred++;
        return;
      }
      const rows = await index.readRepository(name);
      let differs = !rows;
      if (rows) compareRepository(facts, rows, () => (differs = true));
      // equal already (most repositories of a full pass): nothing to write
      if (differs) {
        await index.replaceRepository(facts, facts.hasManifests, changes);
        summary.written++;
      }
      await keepFingerprint(versions, name, before, facts.unstoredLinks);
      summary.read++;
    } catch (err) {
      if (err instanceof RepositoryChangedError) {
        // the request path wrote to it between the read and the write (and told the index): next pass
        await versions.forget(name);
        summary.deferred++;
        return;
      }
      failed(name, err);
    }
  };

  // the share of the full pass: repositories after `after` in the walk's order, `count` of them
  const share = options.share && { after: pathSortKey(options.share.after), left: options.share.count, read: 0, last: options.share.after, complete: true };
  const inShare = (name: string): boolean => {
    if (!share || pathSortKey(name) <= share.after) return false;
    if (share.left === 0) return (share.complete = false);
    share.left--;
    share.read++;
    share.last = name;
    return true;
  };
  let batchStarted: number | undefined;
  for await (const batch of batches(repositoryNames(driver), FINGERPRINT_BATCH)) {
    if (batchStarted !== undefined) await options.rest?.(performance.now() - batchStarted);
    batchStarted = performance.now();
    options.signal?.throwIfAborted();
    for (const name of batch) seen.add(name);
    summary.repositories += batch.length;
    // every fingerprint of the batch is taken before any of its repositories is read
    const [before, kept] = await Promise.all([batchFingerprints(driver, batch, storeNow), options.full ? [] : versions.getMany(batch)]);
    const whole = batch.map((name) => options.full === true || inShare(name));
    await forEach(batch.keys(), RECONCILE_REPOSITORIES, (i) => reconcile(batch[i], before[i], kept[i], whole[i]));
  }
  options.signal?.throwIfAborted();
  for (const name of await index.repositoryNames()) {
    if (seen.has(name)) continue;
    // created after the walk passed its place: it is in storage, and stays
    const changes = await index.changesOf(name);
    if (await inStorage(driver, name)) continue;
    await versions.forget(name);
    if (await index.dropRepository(name, changes)) summary.dropped++;
    else summary.deferred++;
  }
  if (share) summary.share = { read: share.read, last: share.last, complete: share.complete };
  if (options.full || share?.complete) await index.dropUnlinkedBlobs(); // as a rebuild ends
  return summary;
}

/** the batch's fingerprints in one go; if that fails (a path the driver could not read), each alone, so a failure is one repository's */
async function batchFingerprints(driver: StorageDriver, names: string[], storeNow: () => number): Promise<(Fingerprint | { error: unknown })[]> {
  try {
    return await fingerprints(driver, names, storeNow, RECONCILE_REPOSITORIES);
  } catch {
    return mapLimited(names, RECONCILE_REPOSITORIES, (name) => fingerprint(driver, name, storeNow).catch((error: unknown) => ({ error })));
  }
}

/** the names in arrays of `size` (the last one shorter) */
async function* batches<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let batch: T[] = [];
  for await (const item of items) {
    batch.push(item);
    if (batch.length === size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/** how far the current round of the full pass's shares got (index_state FULL_ROUND_KEY) */
interface FullRound {
  /** when the round started (ms since the epoch, as FULL_PASS_KEY or REBUILT_KEY says) */
  started: number;
  /** the last repository read whole in it ('' none yet) */
  after: string;
  /** repositories read whole in it */
  read: number;
}

/**
 * The scheduled pass: one instance at a time, every `interval` (../shared-schedule.ts,
 * `_berth/schedule/reconcile.json`). The full pass is spread over FULL_PASS_MS in shares: each
 * pass also reads whole the repositories after the round's cursor, as many as the round's time
 * so far asks for (a pass every interval: `repositories × interval / FULL_PASS_MS` each; a late
 * round catches up, and one past its time reads all the rest). A rebuild (berth index rebuild, or
 * the one at start-up over an existing root) read everything: a new round starts from it.
 * No pass is skipped after a long one: the rests after each batch keep the reconciler at about
 * half of a core, and a write shows at the next pass only if that pass runs.
 */
export function reconcileTask(driver: StorageDriver, index: MetadataIndex, interval: number, clock: Clock, logger: Pick<Logger, 'info' | 'warn' | 'debug'>, done?: (summary: ReconcileSummary) => void): PeriodicTask {
  /** repositories the last pass walked: the size of a share */
  let lastRepositories: number | undefined;
  return sharedPass(driver, clock, logger, {
    name: 'index reconciliation',
    stateName: 'reconcile',
    interval,
    async run(signal) {
      const started = clock.now();
      const roundStarted = Math.max(...(await Promise.all([index.state(FULL_PASS_KEY), index.state(REBUILT_KEY)])).map((at) => Date.parse(at ?? '')).filter((t) => !Number.isNaN(t)), 0);
      const kept = parseRound(await index.state(FULL_ROUND_KEY));
      const round: FullRound = kept?.started === roundStarted ? kept : { started: roundStarted, after: '', read: 0 };
      const repositories = lastRepositories ?? (await index.repositoryNames()).length;
      // the part of the round due by now: all of it FULL_PASS_MS after its start
      const due = Math.min(1, (started - round.started) / FULL_PASS_MS);
      const count = Math.max(0, Math.ceil(due * repositories) - round.read);
      const summary = await reconcileIndex(driver, index, {
        share: { after: round.after, count },
        signal,
        rest: (busyMs) => rest(busyMs, signal),
        failed: (name, err) => logger.warn({ err, repository: name }, 'index reconciliation: could not reconcile a repository (the next pass tries again)'),
      });
      lastRepositories = summary.repositories;
      const share = summary.share!;
      if (share.complete) {
        // every repository read whole since the round started: the next round starts with this pass
        await index.setState(FULL_PASS_KEY, new Date(started).toISOString());
        await index.setState(FULL_ROUND_KEY, JSON.stringify({ started, after: '', read: 0 } satisfies FullRound));
      } else await index.setState(FULL_ROUND_KEY, JSON.stringify({ started: round.started, after: share.last, read: round.read + share.read } satisfies FullRound));
      done?.(summary);
      const fields = { ...summary, durationMs: clock.now() - started };
      // the share's reads of repositories already equal are routine
      if (summary.written + summary.dropped + summary.failed > 0) logger.info(fields, 'index reconciliation done');
      else logger.debug(fields, 'index reconciliation done: nothing changed');
    },
  });
}

function parseRound(text: string | undefined): FullRound | undefined {
  try {
    const round = JSON.parse(text ?? '') as Partial<FullRound>;
    if (typeof round.started === 'number' && typeof round.after === 'string' && typeof round.read === 'number') return round as FullRound;
  } catch {
    // unreadable: a new round
  }
  return undefined;
}

/**
 * the scheduled pass's rest after each batch: as long as the batch took, so the pass keeps at
 * most half of the time it could have (requests get the rest: the listing of the next batch, its
 * worker message and its SQLite reads all share the process with them). Real time, not the
 * scheduler's clock: what is shared is the machine's.
 */
function rest(busyMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, busyMs * REST_PER_BUSY);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
