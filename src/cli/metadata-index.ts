/** `berth index rebuild CONFIG.yml` and `berth verify --index CONFIG.yml`: the metadata index against storage. */
import { ConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openMetadataIndex } from '../features/metadata.js';
import type { MetadataIndex } from '../metadata/metadata-index.js';
import type { StorageDriver } from '../storage/driver.js';
import { parseCommandArgs } from './command-args.js';
import { progressLine } from './progress.js';
import { commandDriver } from './storage.js';
import { USAGE } from './usage.js';

export async function indexCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const parsed = sub === 'rebuild' ? parseCommandArgs(rest, {}) : `no command "index ${sub ?? ''}" (berth index rebuild CONFIG.yml)`;
  if (typeof parsed === 'string') {
    console.error(`berth index: ${parsed}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(parsed.file);
  return withIndex(config, async (driver, index) => {
    const { rebuildIndex } = await import('../registry/indexing/rebuild.js');
    const progress = progressLine();
    const started = performance.now();
    const summary = await rebuildIndex(driver, index, { progress: (s) => progress.update('repositories indexed', s.repositories) });
    progress.done();
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(summary.manifests / seconds) : summary.manifests;
    console.log(
      `indexed ${summary.repositories} repositories, ${summary.manifests} manifests, ${summary.tags} tags in ${seconds.toFixed(1)} s (${rate} manifests/s)${summary.dropped ? `; dropped ${summary.dropped} repositories storage no longer has` : ''}`,
    );
    return 0;
  });
}

/** `berth verify --index`: exit 1 when the index differs from storage in anything */
export async function verifyMetadataIndex(config: Config): Promise<number> {
  return withIndex(config, async (driver, index) => {
    const { verifyIndex } = await import('../registry/indexing/verify-index.js');
    const differences = await verifyIndex(driver, index, (line) => console.log(line));
    console.log(differences === 0 ? 'the index matches storage' : `${differences} differences between the index and storage (berth index rebuild repairs them, except where a line says otherwise)`);
    return differences > 0 ? 1 : 0;
  });
}

async function withIndex(config: Config, run: (driver: StorageDriver, index: MetadataIndex) => Promise<number>): Promise<number> {
  if (!config.metadata?.enabled) throw new ConfigError(['metadata: the configuration has no metadata index (add a metadata block)'], 'metadata');
  const driver = await commandDriver(config);
  try {
    await driver.ready?.();
    const index = await openMetadataIndex(config);
    try {
      return await run(driver, index);
    } finally {
      await index.close();
    }
  } finally {
    await driver.close?.();
  }
}
