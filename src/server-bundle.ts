/**
 * Bundles the compiled server (dist/cli.js and everything it imports, its npm dependencies
 * included) with esbuild into dist/bundle/: what `npm start`, the `berth` command and the container
 * run. Loading one minified file per chunk instead of some 620 ES modules (kysely alone is 263 of
 * them, zod 95) keeps about 15 MiB off the idle RSS (docs/decisions.md, "Memory"). Modules imported
 * only when configured (features/) stay separate chunks, loaded as before. The native addon
 * (better-sqlite3) and pg's optional one stay outside. Run by `npm run build` after tsc, and by the
 * bench on its own compiled copy.
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** the packages that load a native addon by path: required from node_modules as they are */
const EXTERNAL = ['better-sqlite3', 'pg-native'];

/**
 * `compiledCli`: tsc's cli.js. The bundle goes two folders below the checkout (dist/bundle/), where
 * the modules that find files from their own place (ui/assets.ts, version.ts) look from.
 */
export async function bundleServer(compiledCli: string, outdir: string): Promise<string> {
  const { build } = await import('esbuild');
  await rm(outdir, { recursive: true, force: true });
  await build({
    // the configuration loader (config/load-isolated.ts, a child process) beside cli.js and the chunks
    entryPoints: [compiledCli, join(dirname(compiledCli), 'config/load-worker.js')],
    entryNames: '[name]',
    bundle: true,
    splitting: true,
    // whitespace and syntax only: names stay readable in stack traces and CPU profiles (full
    // minification saved 1.5 MiB more)
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir,
    external: EXTERNAL,
    // the CommonJS dependencies (fastify, pino, ...) call require(): an ES module has none of its own
    banner: { js: "import { createRequire as berthCreateRequire } from 'node:module'; const require = berthCreateRequire(import.meta.url);" },
    legalComments: 'none',
    logLevel: 'warning',
  });
  return join(outdir, 'cli.js');
}

/** `node dist/server-bundle.js [OUTDIR]`: OUTDIR (default dist/bundle/) two folders below the checkout */
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dist = dirname(fileURLToPath(import.meta.url));
  const cli = await bundleServer(join(dist, 'cli.js'), process.argv[2] ?? join(dist, 'bundle'));
  process.stdout.write(`server bundled: ${cli}\n`);
}
