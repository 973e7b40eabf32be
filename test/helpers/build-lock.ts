/**
 * One `npm run build` of this checkout at a time across the suite's test processes. `npm pack`
 * (install.test.ts, through `prepare`) and `npm start` (npm-start.test.ts, through `prestart`) both
 * rebuild dist/: run side by side, tsc rewrote the source maps while the server bundle read them
 * ("Unexpected end of file in source map"). The lock is a directory under .tmp/ (mkdir is atomic);
 * one older than STALE_MS is from a test process that died holding it.
 */
import { mkdir, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './berth-process.js';

const LOCK = join(REPO_ROOT, '.tmp', 'build.lock');
const STALE_MS = 10 * 60_000;

/** waits for the build lock and holds it; the returned function lets it go */
export async function holdBuildLock(): Promise<() => Promise<void>> {
  await mkdir(join(REPO_ROOT, '.tmp'), { recursive: true });
  for (;;) {
    try {
      await mkdir(LOCK);
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await rmdir(LOCK).catch(() => {});
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const since = await stat(LOCK).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (since > STALE_MS) await rmdir(LOCK).catch(() => {});
      await sleep(200);
    }
  }
}
