/**
 * The built browser code (build.ts): read once at start, served under /ui/assets/ by content hash
 * with `Cache-Control: immutable`, and the one HTML page every view of the interface starts from.
 */
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import type { PageSettings } from './wire.js';

// two folders below the checkout both as src/ui/ and as dist/ui/
export const ASSETS_DIR = new URL('../../dist/ui-assets/', import.meta.url);
export const MANIFEST = 'assets.json';

export interface AssetManifest {
  script: string;
  style: string;
}

export interface Asset {
  body: Buffer;
  /** the same, compressed once at start for browsers that take gzip */
  gzipped: Buffer;
  type: string;
}

/** the built files by name, or undefined when the interface was not built (npm run build) */
export async function loadAssets(): Promise<{ manifest: AssetManifest; files: Map<string, Asset> } | undefined> {
  let manifest: AssetManifest;
  try {
    manifest = JSON.parse(await readFile(new URL(MANIFEST, ASSETS_DIR), 'utf8')) as AssetManifest;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const files = new Map<string, Asset>();
  for (const [file, type] of [
    [manifest.script, 'text/javascript; charset=utf-8'],
    [manifest.style, 'text/css; charset=utf-8'],
  ]) {
    const body = await readFile(new URL(file, ASSETS_DIR));
    files.set(file, { body, gzipped: gzipSync(body, { level: 9 }), type });
  }
  return { manifest, files };
}

/** the page: no inline script (the settings are a JSON data block, which a CSP does not run) */
export function indexPage(manifest: AssetManifest, settings: PageSettings): string {
  const base = `${settings.prefix}/ui/assets/`;
  // `<` escaped so no value can close the data block
  const json = JSON.stringify(settings).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>berth</title>
<link rel="stylesheet" href="${base}${manifest.style}">
<script type="application/json" id="berth-settings">${json}</script>
<script type="module" src="${base}${manifest.script}"></script>
</head>
<body><div id="app"></div><noscript>The berth web interface needs JavaScript.</noscript></body>
</html>
`;
}
