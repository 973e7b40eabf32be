/**
 * The metadata index (src/metadata/): opened and migrated at start-up when the configuration has
 * a `metadata` block, and handed to the core's stores, which tell it of every write after storage
 * (registry/indexing/sink.ts). better-sqlite3 or pg and Kysely are loaded only then.
 */
import { join } from 'node:path';
import { ConfigError } from '../config/errors.js';
import type { MetadataConnection } from '../metadata/open.js';
import type { MetadataIndex } from '../metadata/metadata-index.js';
import { auditEnabled, loadAudit, type AuditConfig } from './audit.js';
import type { Feature } from './feature.js';

export interface MetadataConfig {
  storage: { filesystem?: { rootdirectory: string } };
  metadata?: { enabled: boolean; sqlite?: { path?: string }; postgres?: { url: string; poolsize?: number; connecttimeout?: number; statementtimeout?: number }; reconcile?: { interval?: number } };
}

/** the file of the embedded database when metadata.sqlite.path is not set: beside `docker/` in the root, where Distribution never looks */
export const DEFAULT_SQLITE_FILE = 'berth/metadata.sqlite';

/** metadata.reconcile.interval's default (docs/decisions.md, "The reconciler's interval") */
export const DEFAULT_RECONCILE_MS = 60_000;

/** which database the configuration names (the schema checked that one can be named) */
export function metadataConnection(config: MetadataConfig): MetadataConnection {
  const metadata = config.metadata;
  const postgres = metadata?.postgres;
  if (postgres) {
    const { url, poolsize, connecttimeout, statementtimeout } = postgres;
    // the keys set, only: open.ts's defaults fill the others
    const pool = Object.entries({ poolSize: poolsize, connectTimeoutMs: connecttimeout, statementTimeoutMs: statementtimeout }).filter(([, v]) => v !== undefined);
    return { postgres: { url, ...Object.fromEntries(pool) } };
  }
  const path = metadata?.sqlite?.path ?? (config.storage.filesystem && join(config.storage.filesystem.rootdirectory, DEFAULT_SQLITE_FILE));
  if (!path) throw new ConfigError(['metadata.sqlite.path: set the file of the metadata database'], 'metadata.sqlite.path');
  return { sqlite: { path } };
}

/** the configured index, migrated; a failure to open it is a configuration error naming the key */
export async function openMetadataIndex(config: MetadataConfig, now?: () => number): Promise<MetadataIndex> {
  const connection = metadataConnection(config);
  const key = 'postgres' in connection ? 'metadata.postgres.url' : 'metadata.sqlite.path';
  const [{ openDatabase }, { MetadataIndex }] = await Promise.all([import('../metadata/open.js'), import('../metadata/metadata-index.js')]);
  try {
    const { db, engine } = await openDatabase(connection);
    return new MetadataIndex(db, engine, now);
  } catch (err) {
    throw new ConfigError([`${key}: cannot open the metadata database: ${(err as Error).message}`], key);
  }
}

export const metadataFeature: Feature<MetadataConfig & AuditConfig> = {
  name: 'metadata',
  enabled: (config) => config.metadata?.enabled === true,
  async load(config, { scheduler, logger }) {
    const index = await openMetadataIndex(config, () => scheduler.clock.now());
    const [{ IndexListings }, { ListingSource }, { REBUILT_KEY }, { buildIndexAtStartup }, { reconcileTask }, { PullCounts, FLUSH_MS }] = await Promise.all([
      import('../metadata/listings.js'),
      import('../registry/indexing/listing-source.js'),
      import('../metadata/metadata-index.js'),
      import('../registry/indexing/startup-build.js'),
      import('../registry/indexing/reconcile.js'),
      import('../metadata/pulls.js'),
    ]);
    const [{ Browse }, { UsageReads }, { SearchReads }, { HistoryReads }, { ApiTokenRecords }, { ApiTokens, LAST_USE_FLUSH_MS }] = await Promise.all([
      import('../metadata/browse.js'),
      import('../metadata/usage.js'),
      import('../metadata/search.js'),
      import('../metadata/history.js'),
      import('../metadata/api-tokens.js'),
      import('../auth/api-tokens.js'),
    ]);
    const browse = { browse: new Browse(index.db), usage: new UsageReads(index.db, index.engine, () => scheduler.clock.now()), search: new SearchReads(index.db), history: new HistoryReads(index.db), inSync: () => listingSource.inSync() };
    const listingSource = new ListingSource(new IndexListings(index.db), async () => (await index.state(REBUILT_KEY)) !== undefined, logger);
    const flushFailed = (err: unknown) => logger.warn({ err }, 'could not write pull counts to the metadata index (kept for the next flush)');
    const pulls = new PullCounts(index.db, () => scheduler.clock.now(), flushFailed);
    // every process flushes its own counts (a worker other than the first runs no scheduled task, so this is a timer of its own on the clock)
    let closing = false;
    let stopFlushing = () => {};
    const flushLater = () => {
      if (!closing) stopFlushing = scheduler.clock.after(FLUSH_MS, () => void pulls.flush().catch(flushFailed).finally(flushLater));
    };
    flushLater();
    const apiTokens = new ApiTokens(new ApiTokenRecords(index.db), scheduler.clock);
    const usesFailed = (err: unknown) => logger.warn({ err }, "could not write API tokens' last uses to the metadata index (kept for the next flush)");
    let stopUses = () => {};
    const usesLater = () => {
      if (!closing) stopUses = scheduler.clock.after(LAST_USE_FLUSH_MS, () => void apiTokens.flushUses().catch(usesFailed).finally(usesLater));
    };
    usesLater();
    const last = { passes: 0, lastRead: 0, lastSkipped: 0, lastDropped: 0, lastFailed: 0, lastFinishedSeconds: 0 };
    // the audit log lives in this database (features/audit.ts)
    const audit = auditEnabled(config) ? await loadAudit(config, index.db, { scheduler, logger }) : undefined;
    return {
      audit: audit?.sink,
      auditReads: audit?.reads,
      indexSink: index,
      repositorySink: index,
      database: index.db,
      listingSource,
      pulls,
      browse,
      apiTokens,
      attach({ driver }) {
        audit?.attach(driver);
        // storage written without the index telling (a crash, Distribution on a shared root) shows within the interval
        scheduler.every(
          reconcileTask(driver, index, config.metadata?.reconcile?.interval ?? DEFAULT_RECONCILE_MS, scheduler.clock, logger.child({ component: 'reconcile' }), (summary) =>
            Object.assign(last, { passes: last.passes + 1, lastRead: summary.read, lastSkipped: summary.skipped, lastDropped: summary.dropped, lastFailed: summary.failed, lastFinishedSeconds: scheduler.clock.now() / 1000 }),
          ),
        );
      },
      // once the registry listens: storage answers the listings until the index is built
      listening: ({ driver }) => buildIndexAtStartup({ driver, index, source: listingSource, scheduler, logger }),
      figures: () => ({ reconcile: { ...last }, ...audit?.figures() }),
      async close() {
        closing = true;
        stopFlushing();
        stopUses();
        await pulls.flush().catch((err: unknown) => logger.warn({ err }, 'could not write the last pull counts to the metadata index'));
        await apiTokens.flushUses().catch(usesFailed);
        await audit?.close();
        await index.close();
      },
    };
  },
};
