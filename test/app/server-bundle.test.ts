/**
 * The bundled server (src/server-bundle.ts: what `npm start`, the `berth` command and the
 * container run) serves on the default configuration, the metadata index included, from its own
 * chunks: its loader resolves no module of node_modules but the native SQLite addon's, which is
 * where the idle memory it saves comes from (some 600 ES modules fewer). Bundled here from src/ into
 * a folder two below the checkout, as dist/bundle/ is.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { bundleServer, LEFT_OUT } from '../../src/server-bundle.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { freePort } from '../helpers/ports.js';
import { killPid, spawnLogged, waitForHttp } from '../helpers/processes.js';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

let bundled: Promise<{ dir: string; cli: string }> | undefined;

/** one bundle for the file's tests, under the checkout as dist/bundle/ is (a fresh clone has no .tmp/ yet) */
function theBundle(): Promise<{ dir: string; cli: string }> {
  bundled ??= (async () => {
    await mkdir(join(REPO_ROOT, '.tmp'), { recursive: true });
    const dir = await mkdtemp(join(REPO_ROOT, '.tmp', 'server-bundle-'));
    dirs.push(dir);
    return { dir, cli: await bundleServer(join(REPO_ROOT, 'src', 'cli.ts'), join(dir, 'bundle')) };
  })();
  return bundled;
}

/**
 * a process's main thread writes Node's built-in modules it loaded, one a line, to
 * BERTH_BUILTINS_LOG.<pid>, when told to stop and again on exit. Per process: the configuration
 * loader (a child process) loads this too, and with one shared file its list stood whenever the
 * server did not reach its exit handler within killPid's grace (a loaded CI machine)
 */
const BUILTINS_RECORDER = `data:text/javascript,${encodeURIComponent("import { writeFileSync } from 'node:fs'; import { isMainThread } from 'node:worker_threads'; const write = () => writeFileSync(`${process.env.BERTH_BUILTINS_LOG}.${process.pid}`, process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)).join('\\n')); if (isMainThread) { process.prependListener('SIGTERM', write); process.on('exit', write); }")}`;

it('serves pushes and listings from the bundle, loading no package module but the SQLite addon', async () => {
  const { dir, cli } = await theBundle();
  const port = await freePort();
  const config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ version: '0.1', log: { level: 'warn' }, storage: { filesystem: { rootdirectory: join(dir, 'root') } }, http: { addr: `127.0.0.1:${port}`, secret: 'bundle-test' } }));
  const log = join(dir, 'imports.log');
  const builtins = join(dir, 'builtins.log');
  const recorder = pathToFileURL(join(REPO_ROOT, 'test', 'helpers', 'import-recorder.mjs')).href;
  const proc = await spawnLogged(process.execPath, ['--import', recorder, '--import', BUILTINS_RECORDER, cli, 'serve', config], { cwd: dir, env: { ...process.env, BERTH_IMPORT_LOG: log, BERTH_BUILTINS_LOG: builtins }, label: 'bundle' });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/v2/`, { process: proc, timeoutMs: 30_000, name: 'the bundled berth' });
    const blob = Buffer.from('{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}');
    const digest = `sha256:${createHash('sha256').update(blob).digest('hex')}`;
    assert.equal((await fetch(`${base}/v2/a/b/blobs/uploads/?digest=${digest}`, { method: 'POST', body: blob })).status, 201);
    const manifest = JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest, size: blob.length }, layers: [] });
    const put = await fetch(`${base}/v2/a/b/manifests/v1`, { method: 'PUT', body: manifest, headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' } });
    assert.equal(put.status, 201, await put.text());
    assert.deepEqual(await (await fetch(`${base}/v2/a/b/tags/list`)).json(), { name: 'a/b', tags: ['v1'] });
    assert.deepEqual(await (await fetch(`${base}/v2/_catalog`)).json(), { repositories: ['a/b'] });
  } finally {
    await killPid(proc, { graceMs: 5000 });
  }
  // `<pid> <url>` a line: the server's and its configuration loader's (a bundle entry too)
  const urls = (await readFile(log, 'utf8')).split('\n').map((line) => line.slice(line.indexOf(' ') + 1)).filter((url) => url.startsWith('file:'));
  assert.ok(urls.some((url) => url.startsWith(pathToFileURL(join(dir, 'bundle')).href)), `recorded:\n${urls.join('\n')}`);
  const outside = urls.filter((url) => !url.startsWith(pathToFileURL(join(dir, 'bundle')).href) && !url.includes('/node_modules/better-sqlite3/') && !url.endsWith('/import-recorder.mjs'));
  assert.deepEqual(outside, []);
  // the embedded index was opened (the default configuration's)
  assert.ok((await stat(join(dir, 'root', 'berth', 'metadata.sqlite'))).size > 0);
  // fastify's node:http2 is loaded only for http.http2 (src/server-bundle.ts, lazyHttp2): 0.4 MiB of idle RSS
  const loadedBuiltins = (await readFile(`${builtins}.${proc.pid}`, 'utf8')).split('\n');
  assert.ok(loadedBuiltins.includes('http'), `recorded:\n${loadedBuiltins.join('\n')}`);
  assert.ok(!loadedBuiltins.includes('http2'), 'the server loaded node:http2 without http.http2');
});

it('leaves fastify\'s JSON schema compilers (ajv) and inject() out of the bundle', async () => {
  const { dir } = await theBundle();
  // every bundled source file, from the chunks' source maps
  const maps = (await readdir(join(dir, 'bundle'))).filter((name) => name.endsWith('.js.map'));
  const sources = new Set<string>();
  for (const name of maps) for (const source of JSON.parse(await readFile(join(dir, 'bundle', name), 'utf8')).sources as string[]) sources.add(source);
  assert.ok([...sources].some((source) => source.includes('node_modules/fastify/')), `bundled:\n${[...sources].join('\n')}`);
  const leftOut = ['ajv', 'fast-uri', ...LEFT_OUT].filter((name) => [...sources].some((source) => source.includes(`node_modules/${name}/`)));
  assert.deepEqual(leftOut, []);
});
