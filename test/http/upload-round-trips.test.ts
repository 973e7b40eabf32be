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
import type { FileInfo, FileWriter } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

/** the store calls made, as "method path-tail" */
class CountingDriver extends ForwardingDriver {
  calls: string[] = [];
  private note(method: string, path: string): void {
    this.calls.push(`${method} ${path.split('/').slice(-1)[0]}`);
  }
  override getContent(path: string): Promise<Buffer> {
    this.note('getContent', path);
    return super.getContent(path);
  }
  override stat(path: string): Promise<FileInfo> {
    this.note('stat', path);
    return super.stat(path);
  }
  override writer(path: string, append: boolean): Promise<FileWriter> {
    this.note('writer', path);
    return super.writer(path, append);
  }
}

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
    assert.deepEqual(driver.calls, ['getContent startedat', 'writer data']);

    driver.calls = [];
    const digest = `sha256:${createHash('sha256').update(chunk).digest('hex')}`;
    const location = new URL(patched.headers.get('location')!, url);
    location.searchParams.set('digest', digest);
    const put = await fetch(location, { method: 'PUT' });
    assert.equal(put.status, 201);
    assert.deepEqual(driver.calls.slice(0, 2), ['getContent startedat', 'writer data']);
    assert.equal(driver.calls.filter((call) => call === 'getContent startedat').length, 1);
  });
});
