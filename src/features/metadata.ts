/**
 * The metadata index (src/metadata/): opened and migrated at start-up when the configuration has
 * a `metadata` block, and handed to the core's stores, which tell it of every write after storage
 * (registry/indexing/sink.ts). better-sqlite3 or pg and Kysely are loaded only then.
 */
import { join } from 'node:path';
import { ConfigError } from '../config/errors.js';
import type { MetadataConnection } from '../metadata/open.js';
import type { MetadataIndex } from '../metadata/metadata-index.js';
import type { Feature } from './feature.js';

export interface MetadataConfig {
  storage: { filesystem?: { rootdirectory: string } };
  metadata?: { enabled: boolean; sqlite?: { path?: string }; postgres?: { url: string } };
}

/** the file of the embedded database when metadata.sqlite.path is not set: beside `docker/` in the root, where Distribution never looks */
export const DEFAULT_SQLITE_FILE = 'berth/metadata.sqlite';

/** which database the configuration names (the schema checked that one can be named) */
export function metadataConnection(config: MetadataConfig): MetadataConnection {
  const metadata = config.metadata;
  if (metadata?.postgres) return { postgres: { url: metadata.postgres.url } };
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

export const metadataFeature: Feature<MetadataConfig> = {
  name: 'metadata',
  enabled: (config) => config.metadata?.enabled === true,
  async load(config, { scheduler }) {
    const index = await openMetadataIndex(config, () => scheduler.clock.now());
    const [{ Browse }, { UsageReads }, { SearchReads }, { HistoryReads }] = await Promise.all([
      import('../metadata/browse.js'),
      import('../metadata/usage.js'),
      import('../metadata/search.js'),
      import('../metadata/history.js'),
    ]);
    const browse = { browse: new Browse(index.db), usage: new UsageReads(index.db, index.engine, () => scheduler.clock.now()), search: new SearchReads(index.db), history: new HistoryReads(index.db) };
    return { indexSink: index, browse, close: () => index.close() };
  },
};
