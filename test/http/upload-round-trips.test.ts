/**
 * An upload is opened once per request: a PATCH or PUT reads the upload's `startedat` once and
 * does not stat its data before the first byte (each a round trip to the store on S3).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import { CountingDriver } from '../helpers/counting-driver.js';

describe('upload requests open the upload once', () => {
  const driver = new CountingDriver(new InMemoryDriver());
  let app: App;
  let url: string;
  before(async () => {
    const config = validateConfig({ version: '0.1', log: { level: 'error', accesslog: { disabled: true } }, storage: { inmemory: {} }, http: { addr: '127.0.0.1:0', secret: 'test-secret' } }, 'test');
    app = await createApp(config, { logger: pino({ level: 'silent' }), driver });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => app.close());

  it('PATCH and PUT each read startedat once and stat nothing before writing', async () => {
    const started = await fetch(`${url}/v2/team/app/blobs/uploads/`, { method: 'POST' });
    assert.equal(started.status, 202);
    const chunk = Buffer.from('hello, upload');
    driver.calls = [];
    const patched = await fetch(new URL(started.headers.get('location')!, url), { method: 'PATCH', body: chunk, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(patched.status, 202);
    assert.equal(patched.headers.get('range'), `0-${chunk.length - 1}`);
    assert.deepEqual(driver.storeCalls(), ['getContent startedat', 'writer data']);

    driver.calls = [];
    const digest = `sha256:${createHash('sha256').update(chunk).digest('hex')}`;
    const location = new URL(patched.headers.get('location')!, url);
    location.searchParams.set('digest', digest);
    const put = await fetch(location, { method: 'PUT' });
    assert.equal(put.status, 201);
    assert.deepEqual(driver.storeCalls().slice(0, 2), ['getContent startedat', 'writer data']);
    assert.equal(driver.storeCalls().filter((call) => call === 'getContent startedat').length, 1);
  });
});
