/** berth's version, from the nearest package.json above this module (src/, dist/ or a build elsewhere in the checkout) */
import { existsSync, readFileSync } from 'node:fs';

function findVersion(): string {
  let dir = new URL('..', import.meta.url);
  for (let i = 0; i < 4; i++, dir = new URL('..', dir)) {
    const file = new URL('package.json', dir);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

export const VERSION = findVersion();
