/**
 * Rate limiting against the real server: a token bucket per client IP or user, 429
 * TOOMANYREQUESTS with Retry-After and the JSON body, uploads in flight never cut off, and
 * buckets shared by two instances through a real redis-server.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { seededRoot } from '../helpers/auth-endpoints.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { needTool } from '../helpers/tools.js';

async function statuses(url: string, count: number, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    out.push(res.status);
  }
  return out;
}

async function assertLimited(res: Response): Promise<void> {
  assert.equal(res.status, 429);
  assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  assert.equal(res.headers.get('registry-distribution-api-version'), 'registry/2.0');
  assert.deepEqual(await errorCodes(res), ['TOOMANYREQUESTS']);
}

describe('rate limiting in memory', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ ratelimit: { rate: 0.2, burst: 3 } }, { driver: 'inmemory' });
  });
  after(() => registry?.stop());

  it('lets a burst through, then answers 429 with Retry-After and the JSON body', async () => {
    assert.deepEqual(await statuses(`${registry.url}/v2/`, 3), [200, 200, 200]);
    const res = await fetch(`${registry.url}/v2/`);
    await assertLimited(res);
    assert.ok(Number(res.headers.get('retry-after')) <= 5, 'rate 0.2/s: one token within 5s');
    await assertLimited(await fetch(`${registry.url}/v2/some/repo/tags/list`));
  });
});

describe('rate limiting by user', () => {
  let registry: TestRegistry;
  let root: string;
  before(async () => {
    ({ root } = await seededRoot(['team/app']));
    await writeHtpasswd(join(root, 'htpasswd'), { alice: 'a', bob: 'b' });
    registry = await startBerth({ auth: { htpasswd: { realm: 'rl', path: join(root, 'htpasswd') } }, ratelimit: { rate: 0.1, burst: 2, by: 'user' } }, { root });
  });
  after(async () => {
    await registry?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('gives each user a bucket of their own; anonymous requests share one per address', async () => {
    const url = `${registry.url}/v2/team/app/manifests/latest`;
    assert.deepEqual(await statuses(url, 3, { authorization: basic('alice', 'a') }), [200, 200, 429]);
    assert.deepEqual(await statuses(url, 2, { authorization: basic('bob', 'b') }), [200, 200]);
    assert.deepEqual(await statuses(url, 3), [401, 401, 429]);
  });
});

describe('uploads in flight are not cut off', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ ratelimit: { rate: 0.1, burst: 2 } }, { driver: 'inmemory' });
  });
  after(() => registry?.stop());

  it('finishes a slow PATCH while the bucket runs dry', async () => {
    const start = await fetch(`${registry.url}/v2/slow/blobs/uploads/`, { method: 'POST' }); // token 1
    assert.equal(start.status, 202);
    const location = new URL(start.headers.get('location')!, registry.url);
    const patched = new Promise<number>((resolve, reject) => {
      const req = request(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      }); // token 2
      req.on('error', reject);
      (async () => {
        for (let i = 0; i < 10; i++) {
          req.write(Buffer.alloc(64 * 1024, i));
          await sleep(50);
        }
        req.end();
      })().catch(reject);
    });
    await sleep(100);
    await assertLimited(await fetch(`${registry.url}/v2/`)); // the bucket is empty while the PATCH streams
    assert.equal(await patched, 202);
  });
});

describe('rate limiting shared through Redis', needTool('redis-server', 'rate limits shared through Redis'), () => {
  let redis: TestRedis;
  let one: TestRegistry;
  let two: TestRegistry;
  before(async () => {
    redis = await startRedis();
    const config = { redis: { addr: redis.addr, dialtimeout: '1s', readtimeout: '1s' }, ratelimit: { rate: 0.1, burst: 4 } };
    one = await startBerth(config, { driver: 'inmemory' });
    two = await startBerth(config, { driver: 'inmemory' });
  });
  after(async () => {
    await one?.stop();
    await two?.stop();
    await redis?.stop();
  });

  it('draws both instances from one bucket per client', async () => {
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push(...(await statuses(`${one.url}/v2/`, 1)), ...(await statuses(`${two.url}/v2/`, 1)));
    }
    assert.deepEqual(seen, [200, 200, 200, 200, 429, 429]);
    await assertLimited(await fetch(`${one.url}/v2/`));
  });

  it('lets requests through (fail open) when Redis is gone', async () => {
    await redis.stop();
    const started = Date.now();
    const res = await fetch(`${two.url}/v2/`);
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started < 5_000, 'bounded by the Redis timeouts');
  });
});
