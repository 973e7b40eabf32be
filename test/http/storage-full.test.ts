/**
 * A full disk (a 4 MiB tmpfs as the storage root): a push that does not fit answers 507 with a
 * registry error saying the storage is full, the partial upload is removed (its space comes back),
 * and the next push that fits succeeds. Needs root to mount the tmpfs; skipped loudly without.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';

const MiB = 1024 * 1024;

interface Answer {
  status: number;
  body: string;
}

/**
 * A request whose answer may come before its body is sent (the server refuses it half way and
 * closes): fetch reports that as a failure, an HTTP client such as Go's (docker's) reads the answer.
 */
function send(url: URL | string, method: string, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method, headers: { 'content-type': 'application/octet-stream', 'content-length': body.length } }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', (err) => (answered ? undefined : reject(err))); // the rest of the body could not be sent
    req.end(body);
  });
}

/** POST an upload, then PUT the whole blob (monolithic) */
async function pushMonolithic(base: string, name: string, blob: { data: Buffer; digest: string }): Promise<Answer> {
  const started = await fetch(`${base}/v2/${name}/blobs/uploads/`, { method: 'POST' });
  assert.equal(started.status, 202);
  const location = new URL(started.headers.get('location')!, base);
  location.searchParams.set('digest', blob.digest);
  return send(location, 'PUT', blob.data);
}

function mountTmpfs(dir: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return `cannot mount a tmpfs (needs root): ${(err as Error).message.split('\n')[0]}`;
  }
}

const dir = await mkdtemp(join(tmpdir(), 'berth-full-'));
const cannotMount = mountTmpfs(dir);
if (cannotMount) console.error(`\n!!! SKIPPED storage-full tests: ${cannotMount}\n`);

describe('a full storage', { skip: cannotMount }, () => {
  let registry: TestRegistry;
  const uploads = (name: string) => join(dir, 'docker/registry/v2/repositories', name, '_uploads');

  before(async () => {
    registry = await startBerth({}, { root: dir });
  });
  after(async () => {
    await registry?.stop();
    execFileSync('umount', [dir]);
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 507 to a monolithic push that does not fit, removes its upload, and takes the next one that fits', async () => {
    const res = await pushMonolithic(registry.url, 'full/mono', randomBlob(6 * MiB));
    assert.equal(res.status, 507, res.body);
    const body = JSON.parse(res.body) as { errors: { code: string; message: string }[] };
    assert.equal(body.errors[0].code, 'UNKNOWN');
    assert.match(body.errors[0].message, /storage is full/);
    assert.deepEqual(await readdir(uploads('full/mono')), [], 'the partial upload was removed');
    const small = randomBlob(1 * MiB);
    assert.equal((await pushBlob(registry.url, 'full/mono', small.data, small.digest)).status, 201);
  });

  it('answers 507 to a chunk that does not fit; the upload is gone (404) and its space is back', async () => {
    const started = await fetch(`${registry.url}/v2/full/chunked/blobs/uploads/`, { method: 'POST' });
    assert.equal(started.status, 202);
    const location = new URL(started.headers.get('location')!, registry.url);
    const patch = await send(location, 'PATCH', randomBlob(6 * MiB).data);
    assert.equal(patch.status, 507, patch.body);
    assert.match((JSON.parse(patch.body) as { errors: { message: string }[] }).errors[0].message, /storage is full/);
    assert.equal((await fetch(location)).status, 404, 'the upload was discarded');
    const again = randomBlob(2 * MiB);
    assert.equal((await pushBlob(registry.url, 'full/chunked', again.data, again.digest)).status, 201);
  });
});
