/** With authentication, events name the authenticated user as their actor (spec 6.4). */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { randomBlob } from '../helpers/blobs.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

describe('event actor with htpasswd authentication', () => {
  let rx: Receiver;
  let registry: TestRegistry;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-actor-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-pw' });
    rx = await startReceiver();
    registry = await startBerth({
      auth: { htpasswd: { realm: 'berth-test', path: join(dir, 'htpasswd') } },
      notifications: { endpoints: [{ name: 'rx', url: `${rx.url}/events`, timeout: '2s', threshold: 3, backoff: '20ms' }] },
    });
  });
  after(async () => {
    await registry?.stop();
    await rx?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a push and a pull by alice carry actor {name: "alice"}', async () => {
    const blob = randomBlob(100);
    const auth = { authorization: basic('alice', 'alice-pw') };
    const push = await fetch(`${registry.url}/v2/team/app/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: auth });
    assert.equal(push.status, 201);
    const pull = await fetch(`${registry.url}/v2/team/app/blobs/${blob.digest}`, { headers: auth });
    assert.equal(pull.status, 200);
    await pull.arrayBuffer();
    await rx.waitFor(() => rx.delivered().length >= 2, 5000, 'two events');
    const events = rx.delivered() as { action: string; actor: unknown }[];
    assert.deepEqual(events.map((e) => [e.action, e.actor]).sort(), [['pull', { name: 'alice' }], ['push', { name: 'alice' }]]);
  });
});
