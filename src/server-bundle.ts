/**
 * Bundles the compiled server (dist/cli.js and everything it imports, its npm dependencies
 * included) with esbuild into dist/bundle/: what `npm start`, the `berth` command and the container
 * run. Loading one minified file per chunk instead of some 620 ES modules (kysely alone is 263 of
 * them, zod 95) keeps about 15 MiB off the idle RSS (docs/decisions.md, "Memory"). Modules imported
 * only when configured (features/) stay separate chunks, loaded as before. The native addon
 * (better-sqlite3) and pg's optional one stay outside. Run by `npm run build` after tsc, and by the
 * bench on its own compiled copy.
 */
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

/** the packages that load a native addon by path: required from node_modules as they are */
const EXTERNAL = ['better-sqlite3', 'pg-native'];

/**
 * Packages fastify requires only for what the server never does: JSON schemas on routes (berth
 * gives fastify its own compilers, src/http/no-schemas.ts) and `inject()` (the tests', run from
 * src/). Bundled, their source (ajv, fast-json-stringify, light-my-request: some 470 KB) sat
 * unused in the chunk every server loads, and V8 and the parser hold memory in proportion to it
 * (0.9 MiB of idle RSS, docs/performance.md). Should one ever be required, it throws, naming itself.
 */
export const LEFT_OUT = ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request'];

const leaveOut: Plugin = {
  name: 'berth-leave-out',
  setup(build) {
    build.onResolve({ filter: new RegExp(`^(${LEFT_OUT.join('|')})$`) }, (args) => ({ path: args.path, namespace: 'berth-left-out' }));
    // CommonJS (module.exports), so it runs only when required, as the package would have
    build.onLoad({ filter: /.*/, namespace: 'berth-left-out' }, (args) => ({
      contents: `module.exports = (() => { throw new Error(${JSON.stringify(`${args.path} is left out of berth's server bundle (src/server-bundle.ts, LEFT_OUT)`)}); })();`,
      loader: 'js',
    }));
  },
};

/**
 * Modules fastify requires at the top of a file for what berth seldom or never asks of it: Node's
 * http2 (lib/server.js, for `http2: true`, which berth sets with TLS alone) and semver
 * (lib/plugin-utils.js, to check a plugin's declared fastify version). Required on first use
 * instead: node:http2 costs every other server 0.4 MiB of idle RSS, semver's start 0.1-0.2. A
 * fastify whose file no longer reads so is bundled as it is, with a warning
 * (test/app/server-bundle.test.ts checks that serving loads no http2).
 */
const LAZY_REQUIRES: { file: RegExp; name: string; module: string }[] = [
  { file: /[\\/]fastify[\\/]lib[\\/]server\.js$/, name: 'http2', module: 'node:http2' },
  { file: /[\\/]fastify[\\/]lib[\\/]plugin-utils\.js$/, name: 'semver', module: 'semver' },
];

const lazyRequires: Plugin = {
  name: 'berth-lazy-requires',
  setup(build) {
    for (const { file, name, module } of LAZY_REQUIRES) {
      build.onLoad({ filter: file }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        const eager = `const ${name} = require('${module}')`;
        if (!text.includes(eager)) return { contents: text, loader: 'js', warnings: [{ text: `${args.path} no longer has "${eager}": ${module} is loaded as fastify loads it (src/server-bundle.ts, LAZY_REQUIRES)` }] };
        return { contents: text.replace(eager, `const ${name} = new Proxy({}, { get: (_, key) => require('${module}')[key] })`), loader: 'js' };
      });
    }
  },
};

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
    plugins: [leaveOut, lazyRequires],
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
