/**
 * The bundled server (src/server-bundle.ts: what `npm start`, the `berth` command and the
 * container run) serves on the default configuration, the metadata index included, from its own
 * chunks: its loader resolves no module of node_modules but the native SQLite addon's, which is
 * where the idle memory it saves comes from (some 600 ES modules fewer). Bundled here from src/ into
 * a folder two below the checkout, as dist/bundle/ is.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { bundleServer } from '../../src/server-bundle.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { freePort } from '../helpers/ports.js';
import { killPid, spawnLogged, waitForHttp } from '../helpers/processes.js';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

it('serves pushes and listings from the bundle, loading no package module but the SQLite addon', async () => {
  // under the checkout, as dist/bundle/ is (a fresh clone has no .tmp/ yet)
  await mkdir(join(REPO_ROOT, '.tmp'), { recursive: true });
  const dir = await mkdtemp(join(REPO_ROOT, '.tmp', 'server-bundle-'));
  dirs.push(dir);
  const cli = await bundleServer(join(REPO_ROOT, 'src', 'cli.ts'), join(dir, 'bundle'));
  const port = await freePort();
  const config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ version: '0.1', log: { level: 'warn' }, storage: { filesystem: { rootdirectory: join(dir, 'root') } }, http: { addr: `127.0.0.1:${port}`, secret: 'bundle-test' } }));
  const log = join(dir, 'imports.log');
  const recorder = pathToFileURL(join(REPO_ROOT, 'test', 'helpers', 'import-recorder.mjs')).href;
  const proc = await spawnLogged(process.execPath, ['--import', recorder, cli, 'serve', config], { cwd: dir, env: { ...process.env, BERTH_IMPORT_LOG: log }, label: 'bundle' });
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
});
