/**
 * `berth garbage-collect`: with a read-only configuration (nothing writes) or --dry-run, the direct
 * collection; otherwise instances may be serving the storage, and the collection follows online
 * collection's protocol (docs/decisions.md, "Garbage collection (offline)")
 */
import { existsSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { loadConfigIsolated } from '../config/load-isolated.js';
import type { Config } from '../config/schema.js';
import { collectGarbage, summaryLine } from '../registry/gc/index.js';
import { collectFully } from '../runtime/gc-pacing.js';
import { withoutOptimizingCompiler } from '../runtime/startup-heap.js';
import type { RepositorySink } from '../registry/indexing/sink.js';
import type { StorageDriver } from '../storage/driver.js';
import { parseCollectArgs } from './garbage-collect-args.js';
import { progressLine } from './progress.js';
import { commandDriver } from './storage.js';
import { USAGE } from './usage.js';

export async function garbageCollect(argv: string[]): Promise<number> {
  const args = parseCollectArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth garbage-collect: ${args}\n${USAGE}`);
    return 2;
  }
  // validated in a child process: yaml, zod and the schema stay out of this one (its peak RSS, issue 31)
  const { config } = await loadConfigIsolated(args.file);
  // the offline collection's work is system calls: no TurboFan, and the filesystem's reads without
  // libuv's round trips. The online one (a writable configuration) parses S3's answers and runs
  // beside serving instances: V8's usual compilers, the ordinary driver.
  const offline = config.storage.maintenance.readonly.enabled || args.dryRun;
  if (offline) withoutOptimizingCompiler();
  if (args.retention && (config.storage.maintenance.retention?.policies.length ?? 0) === 0) {
    console.error('berth garbage-collect: --retention needs storage.maintenance.retention.policies in the configuration (see docs/configuration.md)');
    return 1;
  }
  const driver = await commandDriver(config, { blocking: offline });
  // the index hears of every repository the collection changes, as the running registry's would
  const index = config.metadata?.enabled && !args.dryRun ? await openIndexIfBuilt(config) : undefined;
  try {
    await driver.ready?.();
    if (args.retention) await retentionBeforeCollection(driver, config, args, index);
    if (!offline) return await collectBesideInstances(driver, config, args, index);
    const progress = progressLine();
    const summary = await collectGarbage(driver, { ...args, report: args.quiet ? undefined : (line) => progress.print(line), progress: collectingAsItGrows(progress.update), index });
    progress.done();
    console.log(summaryLine(summary, args.dryRun));
  } finally {
    await index?.close();
    await driver.close?.();
  }
  return 0;
}

/**
 * an embedded database that was never created has nothing to tell (a registry that opens it builds
 * it from storage), and opening it would create it and load the database's modules for nothing
 * (the features' module too is loaded only for a configuration with an index)
 */
async function openIndexIfBuilt(config: Config) {
  const { metadataConnection, openMetadataIndex } = await import('../features/metadata.js');
  const connection = metadataConnection(config);
  return !('sqlite' in connection) || existsSync(connection.sqlite.path) ? openMetadataIndex(config) : undefined;
}

/** heap growth since the last full V8 collection that calls for another: a few ms each, a few dozen on the bench's 3,000 repositories (8 MiB let the old space reach 13 MiB for 8 alive) */
const COLLECT_AFTER_BYTES = 3 * 1024 * 1024;

/**
 * the progress callback, plus a full V8 collection whenever the heap grew by COLLECT_AFTER_BYTES:
 * the walk's promises and buffers outlive the start-up's small young generation, and V8 let that
 * promoted garbage grow the heap to twice what is alive (docs/performance.md, "Offline garbage
 * collection")
 */
function collectingAsItGrows(update: (what: string, done: number, total?: number) => void): (what: string, done: number, total?: number) => void {
  let after = getHeapStatistics().used_heap_size;
  return (what, done, total) => {
    update(what, done, total);
    if (getHeapStatistics().used_heap_size < after + COLLECT_AFTER_BYTES) return;
    collectFully();
    after = getHeapStatistics().used_heap_size;
  };
}

/**
 * A writable configuration: registries may be serving this storage and every writable berth
 * instance records uses, so the collection is the online one (use records, trash, the delay of
 * storage.maintenance.gc.delay). It does not wait for the instances' shared schedule: a second
 * collection at the same time is safe, it only repeats work.
 */
async function collectBesideInstances(driver: StorageDriver, config: Config, args: { deleteUntagged: boolean; quiet: boolean }, index?: RepositorySink): Promise<number> {
  const { collectOnline } = await import('../registry/gc/online.js');
  const { onlineLine } = await import('../registry/gc/task.js');
  const delayMs = config.storage.maintenance.gc.delay;
  console.error(
    `berth garbage-collect: the configuration is not read-only, so registries may be using this storage: collecting as online collection does ` +
      `(what was unused for storage.maintenance.gc.delay, ${delayMs / 1000}s, goes to the trash, and a later run deletes it from there). ` +
      'With every registry stopped or read-only, run with storage.maintenance.readonly.enabled: true to delete at once.',
  );
  const summary = await collectOnline(driver, { delayMs, dryRun: false, deleteUntagged: args.deleteUntagged, report: args.quiet ? undefined : (line) => console.log(line), progress: collectingAsItGrows(() => {}), index });
  console.log(onlineLine(summary, false, args.deleteUntagged));
  return 0;
}

/** `--retention`: the policies' deletions, their delete events delivered before the collection starts */
async function retentionBeforeCollection(driver: StorageDriver, config: Config, args: { dryRun: boolean; quiet: boolean }, index?: RepositorySink): Promise<void> {
  const { applyRetention, retentionLine } = await import('../registry/retention/index.js');
  const { compilePolicies } = await import('../registry/retention/policy.js');
  const { fixedTags } = await import('../policies/immutable-tags.js');
  const { Notifier } = await import('../notifications/notifier.js');
  const { createLogger } = await import('../log.js');
  const notifier = new Notifier(config.notifications, createLogger(config.log, process.stderr));
  const summary = await applyRetention(driver, {
    policies: compilePolicies(config.storage.maintenance.retention!.policies),
    fixedTag: fixedTags(config.policies),
    now: Date.now(),
    dryRun: args.dryRun,
    events: notifier,
    report: args.quiet ? undefined : (line) => console.log(line),
    index,
  });
  console.log(retentionLine(summary, args.dryRun));
  await notifier.close(config.http.draintimeout);
}
