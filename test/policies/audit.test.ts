/**
 * Every policy refusal reaches the audit log once, with who, what, where and the rule's message:
 * an immutable tag moved and its manifest deleted, a push over a quota, an unsigned pull under
 * `signatures.require`. The policies do not record; the edge does, as for every 403 (src/http/audit.ts).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FLUSH_MS } from '../../src/audit/sink.js';
import type { AuditRow } from '../../src/metadata/audit.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, type Image } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

const ALICE = basic('alice', 'alice-secret');
const BOB = basic('bob', 'bob-secret');

describe('policy refusals in the audit log', () => {
  let dir: string;
  let registry: TestRegistry;
  const clock = new ManualClock();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-policy-audit-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-secret', bob: 'bob-secret' });
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
    await writeFile(join(dir, 'release.pub'), key);
    registry = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'test', path: join(dir, 'htpasswd') },
          access: { '**': { alice: ['pull', 'push', 'delete'], bob: ['pull'] } },
        },
        audit: { readers: ['alice'] },
        policies: [
          { repositories: ['prod/**'], immutabletags: ['v*'], signatures: { require: true, cosign: { keys: [join(dir, 'release.pub')] } } },
          { repositories: ['small/**'], quota: { bytes: 3000 } },
        ],
      },
      { clock },
    );
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function push(name: string, image: Image, tag: string): Promise<Response> {
    for (const blob of image.blobs) {
      const res = await fetch(`${registry.url}/v2/${name}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { authorization: ALICE } });
      assert.equal(res.status, 201, await res.text());
    }
    return fetch(`${registry.url}/v2/${name}/manifests/${tag}`, { method: 'PUT', body: image.body, headers: { authorization: ALICE, 'content-type': image.mediaType } });
  }

  async function denials(): Promise<AuditRow[]> {
    await clock.advance(FLUSH_MS);
    const res = await fetch(`${registry.url}/ui/api/audit?action=deny`, { headers: { authorization: ALICE } });
    assert.equal(res.status, 200, await res.clone().text());
    return ((await res.json()) as { records: AuditRow[] }).records;
  }

  it('records an immutable tag moved, its manifest deleted, a push over the quota and an unsigned pull, once each', async () => {
    const first = buildImage('oci-manifest', { layers: 1 });
    assert.equal((await push('prod/app', first, 'v1')).status, 201);
    const moved = await push('prod/app', buildImage('oci-manifest', { layers: 1 }), 'v1');
    assert.equal(moved.status, 403);
    const deleted = await fetch(`${registry.url}/v2/prod/app/manifests/${first.digest}`, { method: 'DELETE', headers: { authorization: ALICE } });
    assert.equal(deleted.status, 403);
    const over = await push('small/app', buildImage('oci-manifest', { layers: 2, layerSize: 4096 }), 'latest');
    assert.equal(over.status, 403);
    const unsigned = await fetch(`${registry.url}/v2/prod/app/manifests/v1`, { headers: { authorization: BOB, accept: first.mediaType } });
    assert.equal(unsigned.status, 403);

    const records = await denials();
    const seen = records.map((r) => [r.actor, r.repository, r.outcome, r.detail?.replace(/: .*$/s, '')]).reverse();
    assert.deepEqual(seen, [
      ['alice', 'prod/app', 'denied', 'PUT tag v1 of prod/app is immutable (immutable tag rule "v*" of policies[0] (prod/**))'],
      ['alice', 'prod/app', 'denied', `DELETE manifest ${first.digest} of prod/app cannot be deleted`],
      ['alice', 'small/app', 'denied', 'PUT the push would take policies[1] (small/**) over its quota'],
      ['bob', 'prod/app', 'denied', `GET prod/app@${first.digest} is not signed by a key that policies[0] (prod/**) trusts (release)`],
    ]);
    for (const record of records) assert.match(record.address ?? '', /^(::ffff:)?127\.0\.0\.1$/);
  });
});
