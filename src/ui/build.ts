/**
 * Builds the web interface's browser code (client/) with esbuild into content-hashed files under
 * dist/ui-assets/, with `assets.json` naming them; the server reads that at start (assets.ts).
 * Run by `npm run build` (node dist/ui/build.js) and, on demand, by the browser tests.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ASSETS_DIR, MANIFEST, type AssetManifest } from './assets.js';

// this module is two folders below the checkout both as src/ui/build.ts and as dist/ui/build.js
const CLIENT_ENTRY = fileURLToPath(new URL('../../src/ui/client/main.tsx', import.meta.url));

export async function buildUI(): Promise<AssetManifest> {
  const { build } = await import('esbuild');
  const outdir = fileURLToPath(ASSETS_DIR);
  await mkdir(outdir, { recursive: true });
  const result = await build({
    entryPoints: [CLIENT_ENTRY],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir,
    metafile: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const manifest: AssetManifest = {
    script: outputs.find((f) => f.endsWith('.js'))!,
    style: outputs.find((f) => f.endsWith('.css'))!,
  };
  // files of earlier builds go, so the folder holds what assets.json names and nothing else
  for (const file of await readdir(outdir)) {
    if (file !== MANIFEST && !outputs.includes(file)) await rm(new URL(file, ASSETS_DIR));
  }
  await writeFile(new URL(MANIFEST, ASSETS_DIR), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const manifest = await buildUI();
  process.stdout.write(`web interface built: ${manifest.script}, ${manifest.style}\n`);
}
