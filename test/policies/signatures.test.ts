/**
 * Signature policies with the real cosign 2 (test/helpers/cosign.ts): under `signatures.require`
 * a manifest pull of an image no trusted key signed is refused (403 DENIED naming the policy), a
 * cosign-signed one is served, by the `sha256-<hex>.sig` tag and by OCI 1.1 referrers, on two
 * instances on one root (this process and a child process), without a restart after signing.
 * Users: `ci` may push and pull prod/** (exempt), `reader` may only pull. Test images are written
 * by a third instance without authentication on the same root.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { generateKeyPair, needCosign, runCosign } from '../helpers/cosign.js';
import { ACCEPT_MANIFESTS, buildImage, pushImageOK, type Image } from '../helpers/images.js';

const CI = basic('ci', 'ci-pw');
const READER = basic('reader', 'reader-pw');
const OCI11 = { args: ['--registry-referrers-mode=oci-1-1'], env: { COSIGN_EXPERIMENTAL: '1' } };

describe('signature policies with cosign', needCosign(), () => {
  let dir: string;
  let release: { key: string; pub: string };
  let other: { key: string; pub: string };
  let writer: TestRegistry;
  let a: TestRegistry;
  let b: BerthProcess;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-signatures-'));
    release = await generateKeyPair(dir);
    await mkdir(join(dir, 'other'));
    other = await generateKeyPair(join(dir, 'other'));
    // the key's name is its file's name: "release"
    await copyFile(release.pub, join(dir, 'release.pub'));
    await writeHtpasswd(join(dir, 'htpasswd'), { ci: 'ci-pw', reader: 'reader-pw' });
    const root = await mkdtemp(join(tmpdir(), 'berth-signatures-root-'));
    const config: Overrides = {
      auth: { htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') }, access: { 'prod/**': { ci: ['pull', 'push', 'delete'], reader: ['pull'] }, 'dev/**': { '*': ['pull'] } } },
      policies: [{ repositories: ['prod/**'], signatures: { require: true, cosign: { keys: [join(dir, 'release.pub')] } } }],
    };
    writer = await startBerth({}, { root });
    a = await startBerth(config, { root });
    b = await startBerthProcess({ root, config, readyStatus: 401 });
    // cosign signs through instance a as ci
    await mkdir(join(dir, '.docker'));
    const auths = { [new URL(a.url).host]: { auth: Buffer.from('ci:ci-pw').toString('base64') } };
    await writeFile(join(dir, '.docker', 'config.json'), JSON.stringify({ auths }));
  });

  after(async () => {
    await b?.stop();
    await a?.stop();
    await writer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function pull(base: string, name: string, reference: string, as = READER, method = 'GET') {
    const res = await fetch(`${base}/v2/${name}/manifests/${reference}`, { method, headers: { authorization: as, accept: ACCEPT_MANIFESTS } });
    return { status: res.status, body: method === 'HEAD' ? '' : await res.text(), digest: res.headers.get('docker-content-digest') };
  }

  async function sign(ref: string, options: { key?: string; mode?: typeof OCI11 } = {}): Promise<void> {
    await runCosign(dir, ['sign', '--key', options.key ?? release.key, '--tlog-upload=false', '--allow-http-registry', ...(options.mode?.args ?? []), `${new URL(a.url).host}/${ref}`], { env: options.mode?.env });
  }

  async function push(name: string, image: Image = buildImage('oci-manifest'), tag = 'v1'): Promise<Image> {
    return pushImageOK(writer.url, name, image, tag);
  }

  function assertDenied(answer: { status: number; body: string }, name: string) {
    assert.equal(answer.status, 403, answer.body);
    const error = (JSON.parse(answer.body) as { errors: { code: string; message: string }[] }).errors[0];
    assert.equal(error.code, 'DENIED');
    assert.match(error.message, /policies\[0\] \(prod\/\*\*\)/);
    assert.ok(error.message.includes(name), error.message);
  }

  it('refuses an unsigned image, then serves it once cosign signed it (.sig tag), on both instances without a restart', async () => {
    const image = await push('prod/app');
    for (const base of [a.url, b.url]) {
      assertDenied(await pull(base, 'prod/app', 'v1'), 'prod/app');
      assertDenied(await pull(base, 'prod/app', image.digest), 'prod/app');
      assert.equal((await pull(base, 'prod/app', 'v1', READER, 'HEAD')).status, 403);
    }
    await sign(`prod/app@${image.digest}`);
    for (const base of [a.url, b.url]) {
      const served = await pull(base, 'prod/app', 'v1');
      assert.equal(served.status, 200, served.body);
      assert.equal(served.digest, image.digest);
      assert.equal((await pull(base, 'prod/app', image.digest, READER, 'HEAD')).status, 200);
    }
    // the signature itself can be pulled by anyone who may pull
    const sigTag = `sha256-${image.digest.slice('sha256:'.length)}.sig`;
    assert.equal((await pull(b.url, 'prod/app', sigTag)).status, 200);
  });

  it('marks images "signed by <key>" or "not signed" in the web interface\'s JSON', async () => {
    const signed = await push('prod/shown', buildImage('oci-manifest'), 'signed');
    await push('prod/shown', buildImage('oci-manifest'), 'unsigned');
    await push('dev/shown');
    await sign(`prod/shown@${signed.digest}`);
    const page = (await (await fetch(`${b.url}/ui/api/repositories/prod/shown/tags/list`, { headers: { authorization: READER } })).json()) as { tags: { tag: string; signedBy?: string[] }[] };
    const marks = Object.fromEntries(page.tags.map((t) => [t.tag, t.signedBy]));
    assert.deepEqual(marks, { [`sha256-${signed.digest.slice('sha256:'.length)}.sig`]: undefined, signed: ['release'], unsigned: [] });
    const detail = (await (await fetch(`${a.url}/ui/api/repositories/prod/shown/manifests/signed`, { headers: { authorization: READER } })).json()) as { signedBy?: string[] };
    assert.deepEqual(detail.signedBy, ['release']);
    const elsewhere = (await (await fetch(`${a.url}/ui/api/repositories/dev/shown/tags/list`, { headers: { authorization: READER } })).json()) as { tags: { signedBy?: string[] }[] };
    assert.equal(elsewhere.tags[0].signedBy, undefined, 'no signatures policy: no mark');
  });

  it('serves an image signed as an OCI 1.1 referrer, and the referrer itself', async () => {
    const image = await push('prod/referred');
    assertDenied(await pull(b.url, 'prod/referred', 'v1'), 'prod/referred');
    assertDenied(await pull(a.url, 'prod/referred', 'v1'), 'prod/referred');
    await sign(`prod/referred@${image.digest}`, { mode: OCI11 });
    const tags = (await (await fetch(`${a.url}/v2/prod/referred/tags/list`, { headers: { authorization: READER } })).json()) as { tags: string[] };
    assert.deepEqual(tags.tags, ['v1'], 'no .sig tag: the signature is only a referrer');
    for (const base of [a.url, b.url]) assert.equal((await pull(base, 'prod/referred', 'v1')).status, 200);
    const referrers = (await (await fetch(`${b.url}/v2/prod/referred/referrers/${image.digest}`, { headers: { authorization: READER } })).json()) as { manifests: { digest: string; artifactType: string }[] };
    assert.equal(referrers.manifests.length, 1);
    assert.equal(referrers.manifests[0].artifactType, 'application/vnd.dev.cosign.artifact.sig.v1+json');
    assert.equal((await pull(b.url, 'prod/referred', referrers.manifests[0].digest)).status, 200, 'the signature manifest (it has a subject)');
  });

  it('refuses an image again on both instances once its signature is deleted', async () => {
    const image = await push('prod/revoked');
    await sign(`prod/revoked@${image.digest}`);
    for (const base of [a.url, b.url]) assert.equal((await pull(base, 'prod/revoked', 'v1')).status, 200);
    const signature = await pull(a.url, 'prod/revoked', `sha256-${image.digest.slice('sha256:'.length)}.sig`, CI, 'HEAD');
    const deleted = await fetch(`${b.url}/v2/prod/revoked/manifests/${signature.digest}`, { method: 'DELETE', headers: { authorization: CI } });
    assert.equal(deleted.status, 202);
    for (const base of [a.url, b.url]) assertDenied(await pull(base, 'prod/revoked', 'v1'), 'prod/revoked');
  });

  it('refuses an image signed only by a key the policy does not trust', async () => {
    const image = await push('prod/other');
    await sign(`prod/other@${image.digest}`, { key: other.key });
    await sign(`prod/other@${image.digest}`, { key: other.key, mode: OCI11 });
    for (const base of [a.url, b.url]) assertDenied(await pull(base, 'prod/other', 'v1'), 'prod/other');
    // the untrusted signature is still there to be pulled
    assert.equal((await pull(a.url, 'prod/other', `sha256-${image.digest.slice('sha256:'.length)}.sig`)).status, 200);
  });

  it('lets a client that may push pull an unsigned image (so CI can sign what it pushed)', async () => {
    const image = await push('prod/unsigned');
    for (const base of [a.url, b.url]) {
      const answer = await pull(base, 'prod/unsigned', 'v1', CI);
      assert.equal(answer.status, 200, answer.body);
      assert.equal(answer.digest, image.digest);
    }
    assertDenied(await pull(a.url, 'prod/unsigned', 'v1'), 'prod/unsigned');
  });

  it('leaves repositories outside the policy alone, and never checks blobs', async () => {
    const image = await push('dev/tool');
    assert.equal((await pull(a.url, 'dev/tool', 'v1')).status, 200);
    const unsigned = await push('prod/blobs');
    const blob = unsigned.blobs[0];
    const res = await fetch(`${a.url}/v2/prod/blobs/blobs/${blob.digest}`, { headers: { authorization: READER } });
    assert.equal(res.status, 200);
    assert.ok(image);
  });

  it('serves the children of an index signed as a whole, by digest, and refuses those of an unsigned index', async () => {
    const signed = await push('prod/multi', buildImage('oci-index'));
    const unsigned = await push('prod/multi', buildImage('oci-index'), 'unsigned');
    await sign(`prod/multi@${signed.digest}`);
    for (const base of [b.url, a.url]) {
      // children first: no instance has seen the index verified yet, so it is found among the tags
      for (const child of signed.children) assert.equal((await pull(base, 'prod/multi', child.digest)).status, 200, `child ${child.digest} on ${base}`);
      assert.equal((await pull(base, 'prod/multi', 'v1')).status, 200);
      for (const child of signed.children) assert.equal((await pull(base, 'prod/multi', child.digest)).status, 200, `child ${child.digest} on ${base}`);
      assertDenied(await pull(base, 'prod/multi', 'unsigned'), 'prod/multi');
      for (const child of unsigned.children) assertDenied(await pull(base, 'prod/multi', child.digest), 'prod/multi');
    }
  });
});
