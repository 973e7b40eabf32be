/** `berth uploads purge`: the scheduled upload purge, once, now (e.g. after a disk filled up with partial uploads) */
import { loadConfig } from '../config/load.js';
import { purgeUploads } from '../registry/purge.js';
import { parsePurgeArgs } from './uploads-purge-args.js';
import { commandDriver } from './storage.js';
import { USAGE } from './usage.js';

export async function purge(argv: string[]): Promise<number> {
  const args = parsePurgeArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth uploads purge: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  const olderThan = args.olderThan ?? config.storage.maintenance.uploadpurging.age;
  const driver = await commandDriver(config);
  try {
    await driver.ready?.();
    const result = await purgeUploads(driver, new Date(Date.now() - olderThan), args.dryRun);
    for (const dir of result.purged) console.log(`${args.dryRun ? 'would purge' : 'purged'} ${dir}`);
    for (const error of result.errors) console.error(`could not purge ${error}`);
    console.log(`${args.dryRun ? 'would purge' : 'purged'} ${result.purged.length} uploads started before ${new Date(Date.now() - olderThan).toISOString()}${result.errors.length ? `; ${result.errors.length} failed` : ''}`);
    return result.errors.length > 0 ? 1 : 0;
  } finally {
    await driver.close?.();
  }
}
