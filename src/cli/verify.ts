/** `berth verify [--repository NAME] [--fix] CONFIG.yml` */
import { loadConfig } from '../config/load.js';
import { progressLine } from './progress.js';
import { commandDriver } from './storage.js';
import { USAGE } from './usage.js';
import { parseVerifyArgs } from './verify-args.js';
import { verifyMetadataIndex } from './metadata-index.js';

export async function verifyStorage(argv: string[]): Promise<number> {
  const args = parseVerifyArgs(argv);
  if (typeof args === 'string') {
    console.error(`berth verify: ${args}\n${USAGE}`);
    return 2;
  }
  const { config } = await loadConfig(args.file);
  if (args.index) return verifyMetadataIndex(config);
  const { verify, verifyLine } = await import('../registry/verify/index.js');
  const driver = await commandDriver(config);
  const progress = progressLine();
  try {
    await driver.ready?.();
    const summary = await verify(driver, { ...args, report: (line) => progress.print(line), progress: (done, total) => progress.update('blobs hashed', done, total) });
    progress.done();
    console.log(verifyLine(summary));
    return summary.damaged > 0 ? 1 : 0;
  } finally {
    await driver.close?.();
  }
}
