/**
 * Pull replication (issue 30) from a real Distribution 2.8 into berth: a multi-platform image, its
 * cosign signature (tag scheme) and an OCI 1.1 referrer (through the tag-schema fallback, as
 * Distribution 2.8 has no referrers API). The first run (`berth replicate run`) copies them with
 * the same bytes; a second (the scheduled run) fetches nothing again; `cosign verify` against
 * berth succeeds.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { generateKeyPair, needCosign, runCosign } from '../helpers/cosign.js';
import { buildImage, pushContent, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { startRelay, type Relay } from '../helpers/relay.js';

const run = promisify(execFile);
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

async function bytesOf(res: Response): Promise<Buffer> {
  assert.equal(res.status, 200, `${res.url}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

describe('pull replication from Distribution', needCosign(), () => {
  let ref: ReferenceRegistry;
  let relay: Relay;
  let berth: TestRegistry;
  let dir: string;
  let configPath: string;
  const clock = new ManualClock();
  let index: Image;
  let referrer: Image;
  let signatureTag: string;
  let pub: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-replication-'));
    ref = await startReferenceRegistry();
    relay = await startRelay(ref.url);
    // the image, a tag the rule leaves out, and a repository outside it
    index = buildImage('oci-index');
    await pushImageOK(ref.url, 'lib/app', index, 'v1');
    await pushImageOK(ref.url, 'lib/app', buildImage('oci-manifest'), 'dev');
    await pushImageOK(ref.url, 'other/app', buildImage('oci-manifest'), 'v1');
    // cosign's signature of the index, by the tag scheme (sha256-<hex>.sig)
    const keys = await generateKeyPair(dir);
    pub = keys.pub;
    const host = new URL(ref.url).host;
    await runCosign(dir, ['sign', '--key', keys.key, '--tlog-upload=false', '--allow-http-registry', `${host}/lib/app@${index.digest}`]);
    signatureTag = `${index.digest.replace(':', '-')}.sig`;
    // an OCI 1.1 referrer, and the tag schema's index naming it (Distribution 2.8 has no referrers API)
    referrer = buildImage('oci-artifact', { subject: index });
    await pushImageOK(ref.url, 'lib/app', referrer);
    const schema = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [{ ...referrer.descriptor, artifactType: referrer.artifactType }] }));
    assert.equal((await putManifest(ref.url, 'lib/app', index.digest.replace(':', '-'), schema, OCI_INDEX)).status, 201);

    berth = await startBerth(
      { replication: [{ name: 'upstream-lib', pull: { url: relay.url }, repositories: ['lib/**'], tags: ['^v[0-9]'], interval: '1h' }] },
      { clock },
    );
    configPath = join(dir, 'config.yml');
    await writeFile(configPath, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: berth.root } }, replication: [{ name: 'upstream-lib', pull: { url: relay.url }, repositories: ['lib/**'], tags: ['^v[0-9]'] }] }));
  });

  after(async () => {
    await berth?.stop();
    await relay?.close();
    await ref?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('berth replicate run copies the image, every child, its blobs, the signature and the referrer, with the same bytes', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'replicate', 'run', 'upstream-lib', configPath], { cwd: process.cwd() });
    const summary = JSON.parse(stdout);
    assert.equal(summary.failed, 0, stdout);
    assert.equal(summary.images, 1);

    const manifest = (base: string, name: string, reference: string) => fetch(`${base}/v2/${name}/manifests/${reference}`, { headers: { accept: `${OCI_INDEX}, application/vnd.oci.image.manifest.v1+json` } });
    assert.deepEqual(await bytesOf(await manifest(berth.url, 'lib/app', 'v1')), index.body);
    for (const child of index.children) {
      assert.deepEqual(await bytesOf(await manifest(berth.url, 'lib/app', child.digest)), child.body);
      for (const blob of child.blobs) {
        const stored = await bytesOf(await fetch(`${berth.url}/v2/lib/app/blobs/${blob.digest}`));
        assert.equal(`sha256:${createHash('sha256').update(stored).digest('hex')}`, blob.digest);
      }
    }
    // the signature, byte for byte as Distribution holds it
    assert.deepEqual(await bytesOf(await manifest(berth.url, 'lib/app', signatureTag)), await bytesOf(await manifest(ref.url, 'lib/app', signatureTag)));
    // the referrer, found by berth's referrers API
    const referrers = (await (await fetch(`${berth.url}/v2/lib/app/referrers/${index.digest}`)).json()) as { manifests: { digest: string }[] };
    assert.ok(referrers.manifests.some((d) => d.digest === referrer.digest), JSON.stringify(referrers));
    assert.deepEqual(await bytesOf(await manifest(berth.url, 'lib/app', referrer.digest)), referrer.body);
    // what the rule leaves out
    assert.equal((await manifest(berth.url, 'lib/app', 'dev')).status, 404);
    assert.equal((await manifest(berth.url, 'other/app', 'v1')).status, 404);
  });

  it('a second run (the scheduled one) fetches no manifest and no blob again', async () => {
    const first = (await fetchState())!.lastSuccess;
    const before = relay.requests.length;
    await advanceUntil(clock, 'the scheduled run recorded its result', async () => (await fetchState())?.lastSuccess !== first);
    const during = relay.requests.slice(before);
    assert.ok(during.length > 0, 'the scheduled run asked the remote');
    const fetched = during.filter((line) => /^GET \/v2\/.*\/(blobs|manifests)\//.test(line));
    assert.deepEqual(fetched, [], `fetched again: ${fetched.join(', ')}`);
    const state = await fetchState();
    assert.equal(state!.figures.manifestsCopied, 0);
    assert.equal(state!.figures.blobsCopied, 0);
    assert.equal(state!.lastError, undefined);
  });

  it('cosign verify succeeds against berth', async () => {
    const host = new URL(berth.url).host;
    const { stdout } = await runCosign(dir, ['verify', '--key', pub, '--insecure-ignore-tlog=true', '--allow-http-registry', `${host}/lib/app@${index.digest}`]);
    assert.match(stdout, /critical/);
  });

  it('a run broken off in the middle of a blob is finished by the next, with nothing damaged', async () => {
    const root = await mkdtemp(join(dir, 'resumed-'));
    const config = join(dir, 'resumed.yml');
    await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: root } }, replication: [{ name: 'upstream-lib', pull: { url: relay.url }, repositories: ['lib/**'], tags: ['^v[0-9]'], concurrency: 1 }] }));
    const cli = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: process.cwd() });
    relay.cutNextResponseAfter(1000); // the first answer over 1000 bytes (a layer) breaks off
    const broken = await cli(['replicate', 'run', 'upstream-lib', config]).then(
      () => assert.fail('the broken run reported success'),
      (err: { code: number; stdout: string }) => err,
    );
    assert.equal(broken.code, 1);
    assert.equal(JSON.parse(broken.stdout).failed, 1);
    const { stdout } = await cli(['replicate', 'run', 'upstream-lib', config]);
    const summary = JSON.parse(stdout);
    assert.equal(summary.failed, 0, stdout);
    assert.ok(summary.manifestsCopied > 0);
    await cli(['verify', config]); // exit 0: every blob hashes to its name, every link and reference is there
    const resumed = await startBerth({}, { root });
    try {
      const res = await fetch(`${resumed.url}/v2/lib/app/manifests/v1`, { headers: { accept: OCI_INDEX } });
      assert.deepEqual(await bytesOf(res), index.body);
      for (const child of index.children) for (const blob of child.blobs) assert.deepEqual(await bytesOf(await fetch(`${resumed.url}/v2/lib/app/blobs/${blob.digest}`)), blob.data);
    } finally {
      await resumed.stop();
    }
  });

  async function fetchState(): Promise<{ figures: { runs: number; manifestsCopied: number; blobsCopied: number }; lastError?: unknown; lastSuccess?: string } | undefined> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'replicate', 'status', configPath], { cwd: process.cwd() });
    const rule = (JSON.parse(stdout) as { rules: { lastRun?: { runs: number; manifestsCopied: number; blobsCopied: number }; lastError?: unknown; lastSuccess?: string }[] }).rules[0];
    return rule.lastRun && { figures: rule.lastRun, lastError: rule.lastError, lastSuccess: rule.lastSuccess };
  }
});
