/**
 * storage.calls: with the S3 store frozen (radosgw stopped with SIGSTOP), a request answers 503
 * UNAVAILABLE with Retry-After once a store call passes `timeout`, instead of hanging; a call that
 * answers late but within the bound is logged as slow; the registry serves again once the store
 * does. The configuration's defaults and refusals.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { sharedCeph, stopSharedCeph, useOwnCeph } from '../helpers/ceph.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { CEPH_TOOLS } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';

useOwnCeph(); // radosgw is frozen (SIGSTOP) here: not the suite's Ceph, which other files use meanwhile

describe('storage.calls configuration', () => {
  const calls = (extra: object) => validateConfig({ version: '0.1', storage: { inmemory: {}, ...extra } }, 't').storage.calls;
  it('bounds calls at 30s and logs those over 5s by default; 0 turns either off; a non-duration is refused', () => {
    assert.deepEqual(calls({}), { timeout: 30_000, slow: 5000 });
    assert.deepEqual(calls({ calls: { timeout: '0', slow: '1s' } }), { timeout: 0, slow: 1000 });
    assert.throws(() => calls({ calls: { timeout: 'soon' } }), /storage\.calls\.timeout/);
  });
});

describe('storage.calls on a frozen S3 store', needTools(CEPH_TOOLS, 'the storage deadline test'), () => {
  after(() => stopSharedCeph());

  it('answers 503 with Retry-After when a store call passes the bound, logs a late call as slow, and serves again', async () => {
    const { ceph, bucket } = await sharedCeph();
    const rgw = Number(readFileSync(join(ceph.dir, 'run', 'rgw.pid'), 'utf8'));
    const lines: { msg: string; operation?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { msg: string });
        done();
      },
    });
    const config = validateConfig(
      {
        version: '0.1',
        log: { accesslog: { disabled: true } },
        storage: { s3: ceph.params(bucket, { rootdirectory: `/deadlines-${Date.now()}` }), calls: { timeout: '2s', slow: '300ms' }, redirect: { disable: true } },
        http: { addr: '127.0.0.1:0', secret: 's' },
      },
      'test',
    );
    const app = await createApp(config, { logger: pino({ level: 'warn' }, sink) });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const image = await pushImageOK(url, 'frozen/app', buildImage('docker-v2'), 'v1');
      process.kill(rgw, 'SIGSTOP');
      try {
        const res = await fetch(`${url}/v2/frozen/app/manifests/v1`, { headers: { accept: image.mediaType } });
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '5');
        const body = (await res.json()) as { errors: { code: string; message: string }[] };
        assert.equal(body.errors[0].code, 'UNAVAILABLE');
        assert.match(body.errors[0].message, /no answer within 2s \(storage\.calls\.timeout\)/);
        assert.ok(lines.some((l) => l.msg === 'storage call timed out; the request answers 503'), JSON.stringify(lines));
        // frozen for less than the bound: the answer comes, and the call is logged as slow
        const late = fetch(`${url}/v2/frozen/app/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
        await new Promise((resolve) => setTimeout(resolve, 700));
        process.kill(rgw, 'SIGCONT');
        assert.equal((await late).status, 200);
        assert.ok(lines.some((l) => l.msg === 'slow storage call'), JSON.stringify(lines));
      } finally {
        process.kill(rgw, 'SIGCONT');
      }
      assert.equal((await fetch(`${url}/v2/frozen/app/manifests/v1`, { headers: { accept: image.mediaType } })).status, 200);
    } finally {
      await app.close();
    }
  });
});
