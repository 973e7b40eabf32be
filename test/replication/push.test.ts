/**
 * Push replication (issue 30): every push to a matching repository goes to a Distribution and to
 * a second berth; while they are down the pushes wait in the durable queue (a restart of the
 * source loses none), the rule backs off on the scheduler's clock and shows what it is behind
 * and the last error; once they are back the content arrives. A delete follows with `deletes`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { startRelay, type Relay } from '../helpers/relay.js';

const run = promisify(execFile);
const ACCEPT = 'application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json';

async function manifestBytes(base: string, name: string, reference: string): Promise<Buffer | number> {
  const res = await fetch(`${base}/v2/${name}/manifests/${reference}`, { headers: { accept: ACCEPT } });
  return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : res.status;
}

describe('push replication into Distribution and a second berth', () => {
  let dir: string;
  let ref: ReferenceRegistry;
  let refRoot: string;
  let mirrorRoot: string;
  let sourceRoot: string;
  let mirror: TestRegistry;
  let source: TestRegistry;
  let toRef: Relay;
  let toMirror: Relay;
  let configPath: string;
  const clock = new ManualClock();
  const v1: Image = buildImage('oci-index');
  const v2: Image = buildImage('oci-manifest');
  let overrides: Record<string, unknown>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-push-replication-'));
    [refRoot, mirrorRoot, sourceRoot] = await Promise.all(['ref', 'mirror', 'source'].map((name) => mkdtemp(join(dir, `${name}-`))));
    ref = await startReferenceRegistry({ rootdirectory: refRoot, deleteEnabled: true });
    mirror = await startBerth({}, { root: mirrorRoot });
    toRef = await startRelay(ref.url);
    toMirror = await startRelay(mirror.url);
    const rules = [
      { name: 'dr', push: { url: toRef.url }, repositories: ['app/**'], deletes: true },
      { name: 'mirror', push: { url: toMirror.url }, repositories: ['app/**'], tags: ['^v'] },
    ];
    overrides = { replication: rules, http: { debug: { addr: '127.0.0.1:0', prometheus: { enabled: true } } } };
    source = await startBerth(overrides, { root: sourceRoot, clock });
    configPath = join(dir, 'config.yml');
    await writeFile(configPath, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: sourceRoot } }, replication: rules }));
  });

  after(async () => {
    await source?.stop();
    await mirror?.stop();
    await toRef?.close();
    await toMirror?.close();
    await ref?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function status(): Promise<Record<string, { behind: number; lastError?: { message: string }; retryAt?: string }>> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'replicate', 'status', configPath], { cwd: process.cwd() });
    return Object.fromEntries((JSON.parse(stdout) as { rules: { rule: string; behind: number }[] }).rules.map((r) => [r.rule, r]));
  }

  it('a push arrives on both remotes with its children and blobs, the same bytes', async () => {
    await pushImageOK(source.url, 'app/web', v1, 'v1');
    await pushImageOK(source.url, 'other/web', buildImage('oci-manifest'), 'v1');
    await advanceUntil(clock, 'v1 reached both remotes', async () => (await manifestBytes(ref.url, 'app/web', 'v1')) instanceof Buffer && (await manifestBytes(mirror.url, 'app/web', 'v1')) instanceof Buffer, { step: 1000 });
    for (const base of [ref.url, mirror.url]) {
      assert.deepEqual(await manifestBytes(base, 'app/web', 'v1'), v1.body);
      for (const child of v1.children) {
        assert.deepEqual(await manifestBytes(base, 'app/web', child.digest), child.body);
        for (const blob of child.blobs) {
          const res = await fetch(`${base}/v2/app/web/blobs/${blob.digest}`);
          assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
        }
      }
      assert.equal(await manifestBytes(base, 'other/web', 'v1'), 404, 'a repository outside the rule is not replicated');
    }
    const state = await status();
    assert.equal(state.dr.behind, 0);
    assert.equal(state.mirror.behind, 0);
  });

  it('a referrer pushed by digest follows, listed by the tag schema on Distribution 2.8 and by the API on berth', async () => {
    const referrer = buildImage('oci-artifact', { subject: v1 });
    await pushImageOK(source.url, 'app/web', referrer);
    const schemaTag = v1.digest.replace(':', '-');
    await advanceUntil(clock, 'the referrer reached both remotes', async () => (await manifestBytes(ref.url, 'app/web', schemaTag)) instanceof Buffer && (await manifestBytes(mirror.url, 'app/web', referrer.digest)) instanceof Buffer, { step: 1000 });
    const index = JSON.parse(((await manifestBytes(ref.url, 'app/web', schemaTag)) as Buffer).toString()) as { manifests: { digest: string; artifactType?: string }[] };
    assert.deepEqual(index.manifests.map((d) => [d.digest, d.artifactType]), [[referrer.digest, referrer.artifactType]]);
    assert.deepEqual(await manifestBytes(ref.url, 'app/web', referrer.digest), referrer.body);
    const listed = (await (await fetch(`${mirror.url}/v2/app/web/referrers/${v1.digest}`)).json()) as { manifests: { digest: string }[] };
    assert.deepEqual(listed.manifests.map((d) => d.digest), [referrer.digest]);
    assert.equal(await manifestBytes(mirror.url, 'app/web', schemaTag), 404, 'berth has the API: no tag schema there');
  });

  it('with the remotes down, a push waits in the queue through a restart of the source and arrives once they are back', async () => {
    await ref.stop();
    await mirror.stop();
    await pushImageOK(source.url, 'app/web', v2, 'v2');
    await advanceUntil(clock, 'both rules report the failure', async () => {
      const state = await status();
      return state.dr.lastError !== undefined && state.mirror.lastError !== undefined;
    }, { step: 1000 });
    const down = await status();
    assert.ok(down.dr.behind >= 1 && down.mirror.behind >= 1, JSON.stringify(down));
    assert.match(down.dr.lastError!.message, /unavailable/);
    assert.ok(down.dr.retryAt, 'the rule says when it tries again');
    // and in the metrics
    const metrics = await (await fetch(`${source.app.debugURL}/metrics`)).text();
    assert.match(metrics, /^berth_replication_dr_pending [1-9]/m);
    assert.match(metrics, /^berth_replication_mirror_last_error_seconds [1-9]/m);
    assert.match(metrics, /^berth_replication_dr_send_failures [1-9]/m);
    // the source restarts: the queue is in its storage
    await source.app.close();
    source = await startBerth(overrides, { root: sourceRoot, clock });
    // the remotes come back (Distribution on a new port, behind the same address)
    ref = await startReferenceRegistry({ rootdirectory: refRoot, deleteEnabled: true });
    toRef.target = ref.url;
    mirror = await startBerth({}, { root: mirrorRoot });
    toMirror.target = mirror.url;
    await advanceUntil(clock, 'v2 reached both remotes', async () => (await manifestBytes(ref.url, 'app/web', 'v2')) instanceof Buffer && (await manifestBytes(mirror.url, 'app/web', 'v2')) instanceof Buffer, { step: 30_000 });
    assert.deepEqual(await manifestBytes(ref.url, 'app/web', 'v2'), v2.body);
    assert.deepEqual(await manifestBytes(mirror.url, 'app/web', 'v2'), v2.body);
    await advanceUntil(clock, 'the queues are empty', async () => {
      const state = await status();
      return state.dr.behind === 0 && state.mirror.behind === 0 && state.dr.lastError === undefined;
    }, { step: 30_000 });
  });

  it('a delete goes to the remote of a rule with deletes, not to the other', async () => {
    const res = await fetch(`${source.url}/v2/app/web/manifests/${v2.digest}`, { method: 'DELETE' });
    assert.equal(res.status, 202);
    await advanceUntil(clock, 'the delete reached Distribution', async () => (await manifestBytes(ref.url, 'app/web', v2.digest)) === 404, { step: 1000 });
    assert.deepEqual(await manifestBytes(mirror.url, 'app/web', v2.digest), v2.body);
  });
});
