/**
 * The index built when berth starts on an index that was never built: the first start after an
 * upgrade, on a root Distribution filled, or on a new PostgreSQL database. Storage answers the
 * listings meanwhile (listing-source.ts); the index answers once the build has finished.
 *
 * - An empty root is built at once (there is nothing to read), before the registry answers.
 * - Otherwise the build runs in the background, on the scheduler, so a large root does not hold up
 *   start-up. The rebuild is safe while berth serves (rebuild.ts).
 * - Of the instances sharing one database, only the one holding the lease `building` (a row of
 *   `index_state`, metadata/lease.ts) builds; it renews the lease while it runs. The others look
 *   every BUILD_POLL_MS whether the build finished, and take over when its holder's lease ran out
 *   (it died). Only the first worker of `http.workers` runs the scheduler's tasks; every worker
 *   sees the build finished on its next listing.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Lease } from '../../metadata/lease.js';
import type { MetadataIndex } from '../../metadata/metadata-index.js';
import type { Scheduler } from '../../scheduler/scheduler.js';
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { REPOSITORIES } from '../layout.js';
import type { ListingSource } from './listing-source.js';
import { rebuildIndex } from './rebuild.js';

/** the index_state key of the build's lease */
export const BUILD_LEASE_KEY = 'building';
/** how long the lease holds without renewal; renewed every third of it */
export const BUILD_HOLD_MS = 5 * 60_000;
/** how often an instance that does not build looks whether the build finished or its holder died */
export const BUILD_POLL_MS = 30_000;

export interface StartupBuild {
  driver: StorageDriver;
  index: MetadataIndex;
  source: ListingSource;
  scheduler: Scheduler;
  logger: Pick<Logger, 'info' | 'warn'>;
}

/** builds the index at once when the root is empty, else starts its build in the background; nothing when it was built */
export async function buildIndexAtStartup(options: StartupBuild): Promise<void> {
  if (await options.source.inSync()) return;
  const lease = new Lease(options.index.db, BUILD_LEASE_KEY, randomUUID());
  const empty = ((await unlessMissing(options.driver.listNames(REPOSITORIES))) ?? []).length === 0;
  if (empty && (await build(options, lease))) return;
  const stop = options.scheduler.every({
    name: 'metadata index build',
    interval: BUILD_POLL_MS,
    firstDelay: 0,
    async run(signal) {
      if ((await options.source.inSync()) || (await build(options, lease, signal))) stop();
    },
  });
}

/** builds the index when this instance takes the lease; true once it is built */
async function build({ driver, index, source, scheduler, logger }: StartupBuild, lease: Lease, signal?: AbortSignal): Promise<boolean> {
  const { clock } = scheduler;
  if (!(await lease.take(clock.now(), clock.now() + BUILD_HOLD_MS))) return false;
  const started = clock.now();
  logger.info('the metadata index was never built: building it from storage (storage answers the listings meanwhile)');
  let cancel = clock.after(BUILD_HOLD_MS / 3, renew);
  function renew() {
    lease.take(clock.now(), clock.now() + BUILD_HOLD_MS).then(
      (held) => held || logger.warn('the metadata index build lost its lease: another instance may build too'),
      (err) => logger.warn({ err }, 'the metadata index build could not renew its lease'),
    );
    cancel = clock.after(BUILD_HOLD_MS / 3, renew);
  }
  try {
    const summary = await rebuildIndex(driver, index, { signal, now: () => clock.now() });
    source.markBuilt();
    logger.info({ ...summary, ms: clock.now() - started }, 'the metadata index is built: it answers the catalog and the tag lists');
    return true;
  } finally {
    cancel();
    await lease.release();
  }
}
