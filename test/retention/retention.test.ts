/**
 * Retention policies on a running berth (the scheduled pass, a ManualClock for time) on the
 * filesystem and on S3 (Ceph), with a real notification receiver for the delete events; and
 * `berth garbage-collect --retention [--dry-run]`, the real command in a child process.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { exists, pulledAt } from '../helpers/activity.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { needTools } from '../helpers/tools.js';
import { runCommand } from '../gc/harness.js';

const HOUR = 3_600_000;
/**
 * The upload purge takes an upload whose `startedat` is not written yet for a broken one and
 * removes it under a POST in progress (src/registry/purge.ts, reported): off while the clock moves.
 */
const NO_PURGE = { uploadpurging: { enabled: false } };
const MINUTE = 60_000;

const POLICIES = [
  {
    repositories: ['team/*'],
    keep: { newest: 2, tags: ['latest', 'release-.*', 'multi'] },
    delete: { tagsolderthan: '90m', untaggedolderthan: '1h' },
  },
  { repositories: ['pulled/**'], delete: { notpulledfor: '2h' } },
];

interface Pushed {
  v1: Image;
  v2: Image;
  v3: Image;
  release: Image;
  loose: Image;
  index: Image;
  a: Image;
  b: Image;
  other: Image;
}

/**
 * At t0: team/app v1, release-1, an image by digest only (loose) and a tagged index (its children
 * are untagged); pulled/x a and b; other/app old (no policy). t0+1h: v2. t0+2h: v3 and latest
 * (the same image). t0+2h30m: pulled/x:a pulled.
 */
async function pushHistory(berth: TestRegistry, clock: ManualClock): Promise<Pushed> {
  const push = (name: string, tag?: string) => pushImageOK(berth.url, name, buildImage('docker-v2', { layers: 1 }), tag);
  const v1 = await push('team/app', 'v1');
  const release = await push('team/app', 'release-1');
  const loose = await push('team/app');
  const index = await pushImageOK(berth.url, 'team/app', buildImage('oci-index'), 'multi');
  const a = await push('pulled/x', 'a');
  const b = await push('pulled/x', 'b');
  const other = await push('other/app', 'old');
  await clock.advance(HOUR);
  const v2 = await push('team/app', 'v2');
  await clock.advance(HOUR);
  const v3 = await push('team/app', 'v3');
  assert.equal((await fetch(`${berth.url}/v2/team/app/manifests/latest`, { method: 'PUT', body: v3.body, headers: { 'content-type': v3.mediaType } })).status, 201);
  await clock.advance(30 * MINUTE);
  assert.equal((await fetch(`${berth.url}/v2/pulled/x/manifests/a`)).status, 200);
  await pulledAt(berth.app.driver, 'pulled/x', a.digest, clock.now());
  return { v1, v2, v3, release, loose, index, a, b, other };
}

const tagged = (berth: TestRegistry, name: string, tag: string) => exists(berth.app.driver, layout.tagCurrentLink(name, tag));
const stored = (berth: TestRegistry, name: string, digest: string) => exists(berth.app.driver, layout.manifestRevisionLink(name, digest as Digest));

interface DeleteEvent {
  action: string;
  target: { digest: string; repository: string; tag?: string };
}

/** the scheduled pass after t0+3h: what goes, what stays, and the events */
async function retentionStory(berth: TestRegistry, clock: ManualClock, receiver: Receiver): Promise<void> {
  const p = await pushHistory(berth, clock);
  const expected = [
    { repository: 'team/app', digest: p.v1.digest, tag: 'v1' },
    { repository: 'team/app', digest: p.v2.digest, tag: 'v2' },
    { repository: 'pulled/x', digest: p.b.digest, tag: 'b' },
    { repository: 'team/app', digest: p.v1.digest },
    { repository: 'team/app', digest: p.v2.digest },
    { repository: 'team/app', digest: p.loose.digest },
  ];
  const deletes = () => (receiver.delivered() as unknown as DeleteEvent[]).filter((e) => e.action === 'delete').map((e) => e.target);
  await advanceUntil(clock, 'team/app:v1 is deleted', async () => !(await tagged(berth, 'team/app', 'v1')));
  // an event follows each deletion: once all have come, the pass is done
  await receiver.waitFor(() => deletes().length >= expected.length, 20_000, 'the delete events');

  assert.equal(await tagged(berth, 'team/app', 'v2'), false, 'v2: pushed 2h ago, not among the newest 2');
  for (const tag of ['v3', 'latest', 'release-1', 'multi']) assert.ok(await tagged(berth, 'team/app', tag), `team/app:${tag} stays`);
  assert.ok(await tagged(berth, 'pulled/x', 'a'), 'pulled/x:a was pulled 30m before');
  assert.equal(await tagged(berth, 'pulled/x', 'b'), false, 'pulled/x:b was never pulled');
  assert.ok(await tagged(berth, 'other/app', 'old'), 'no policy governs other/app');
  for (const image of [p.v1, p.v2, p.loose]) assert.equal(await stored(berth, 'team/app', image.digest), false, `untagged ${image.digest} is deleted`);
  for (const image of [p.v3, p.release, p.index, ...p.index.children]) assert.ok(await stored(berth, 'team/app', image.digest), `${image.digest} stays`);
  assert.ok(await stored(berth, 'pulled/x', p.b.digest), 'pulled/x has no untagged rule: b stays untagged');
  for (const blob of p.v1.blobs) assert.ok(await exists(berth.app.driver, layout.blobData(blob.digest as Digest)), 'blobs are left to garbage collection');
  const res = await fetch(`${berth.url}/v2/team/app/manifests/v1`);
  assert.equal(res.status, 404);

  const key = (t: { repository: string; digest: string; tag?: string }) => `${t.repository}@${t.digest}#${t.tag ?? ''}`;
  assert.deepEqual(deletes().map(key).sort(), expected.map(key).sort());
}

/** sets the modification time of every file under `dir` back by `ms` */
async function dateBack(dir: string, ms: number): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const { mtimeMs } = await stat(path);
    await utimes(path, new Date(mtimeMs - ms), new Date(mtimeMs - ms));
  }
}

function describeOn(kind: 'filesystem' | 's3', options: { skip: string | false } = { skip: false }): void {
  describe(`retention policies, scheduled, on ${kind}`, options, () => {
    let receiver: Receiver;
    let berth: TestRegistry | undefined;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => {
      await berth?.stop();
      await receiver?.close();
      if (kind === 's3') await stopSharedCeph();
    });

    it('deletes the tags and untagged manifests the policies say, with delete events, and leaves blobs to garbage collection', async () => {
      const clock = new ManualClock(Date.now());
      const config: Overrides = {
        // upload purging off: its first run (a minute in) races with the pushes (see NO_PURGE)
        storage: { maintenance: { retention: { enabled: true, interval: '3h', policies: POLICIES }, ...NO_PURGE } },
        notifications: { endpoints: [{ name: 'rx', url: `${receiver.url}/events`, timeout: '2s', threshold: 3, backoff: '20ms' }] },
      };
      berth = await startBerth(config, { driver: kind, clock });
      await retentionStory(berth, clock, receiver);
    });
  });
}

describeOn('filesystem');
describeOn('s3', needTools(CEPH_TOOLS, 'the S3 retention test'));

describe('berth garbage-collect --retention', () => {
  let dir: string;
  let receiver: Receiver;
  let berth: TestRegistry | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-retention-'));
    receiver = await startReceiver();
  });
  after(async () => {
    await berth?.stop();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints what would go with --dry-run and deletes nothing, then deletes it with delete events and collects the blobs it freed', async () => {
    // pushed with a clock three hours behind, files dated back as much: the command, on the
    // system clock, finds them three hours old
    berth = await startBerth({}, { clock: new ManualClock(Date.now() - 3 * HOUR) });
    const old = await pushImageOK(berth.url, 'team/app', buildImage('docker-v2', { layers: 1 }), 'v1');
    const kept = await pushImageOK(berth.url, 'team/app', buildImage('docker-v2', { layers: 1 }), 'release-1');
    await dateBack(berth.root!, 3 * HOUR);
    const file = join(dir, 'config.yml');
    const config = {
      version: '0.1',
      log: { level: 'error' },
      storage: { filesystem: { rootdirectory: berth.root }, maintenance: { readonly: { enabled: true }, retention: { policies: [{ ...POLICIES[0], keep: { tags: ['release-.*'] } }] } } },
      notifications: { endpoints: [{ name: 'rx', url: `${receiver.url}/events`, timeout: '2s', threshold: 3, backoff: '20ms' }] },
    };
    await writeFile(file, stringify(config));
    const gc = (...args: string[]) => runCommand(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli.ts'), 'garbage-collect', ...args, file]);

    const dry = await gc('--retention', '--dry-run');
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`team/app: tag v1 \\(${old.digest}\\) would be deleted: pushed 3h ago`));
    assert.match(dry.stdout, new RegExp(`team/app: untagged manifest ${old.digest} would be deleted`));
    assert.match(dry.stdout, /retention \(dry run\): 1 repositories under a policy, would delete 1 tags and 1 untagged manifests/);
    assert.ok(await tagged(berth, 'team/app', 'v1'), 'a dry run deletes nothing');
    assert.equal(receiver.requests.length, 0, 'and sends no event');

    const real = await gc('--retention');
    assert.equal(real.code, 0, real.stderr);
    assert.match(real.stdout, /retention: 1 repositories under a policy, deleted 1 tags and 1 untagged manifests/);
    assert.equal(await tagged(berth, 'team/app', 'v1'), false);
    assert.ok(await tagged(berth, 'team/app', 'release-1'));
    for (const blob of old.blobs) assert.equal(await exists(berth.app.driver, layout.blobData(blob.digest as Digest)), false, 'the collection freed its blobs');
    for (const blob of kept.blobs) assert.ok(await exists(berth.app.driver, layout.blobData(blob.digest as Digest)));
    const targets = (receiver.delivered() as unknown as DeleteEvent[]).map((e) => `${e.action} ${e.target.digest} ${e.target.tag ?? '-'}`).sort();
    assert.deepEqual(targets, [`delete ${old.digest} -`, `delete ${old.digest} v1`], 'delivered before the command ended');
  });

  it('refuses --retention without policies', async () => {
    const file = join(dir, 'bare.yml');
    await writeFile(file, stringify({ version: '0.1', storage: { filesystem: { rootdirectory: join(dir, 'r') }, maintenance: { readonly: { enabled: true } } } }));
    const out = await runCommand(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli.ts'), 'garbage-collect', '--retention', file]);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /--retention needs storage\.maintenance\.retention\.policies/);
  });
});
