/** The access log line: a failed request says why and for whom; chunked bodies count their bytes. */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';

describe('access log', () => {
  let dir: string;
  let app: App;
  let url: string;
  const lines: Record<string, unknown>[] = [];
  const auth = { authorization: basic('alice', 'wonderland') };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-accesslog-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'wonderland' });
    const config = validateConfig(
      { version: '0.1', storage: { inmemory: {} }, http: { secret: 's' }, auth: { htpasswd: { path: join(dir, 'htpasswd') } } },
      'test',
    );
    app = await createApp(config, { logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) }) });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  const lineFor = (method: string, pathPart: string) => lines.filter((l) => l.msg === 'request' && l.method === method && String(l.path).includes(pathPart)).at(-1);

  it('a refused push carries the error code, its message and the user', async () => {
    const res = await fetch(`${url}/v2/team/app/manifests/v1`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: '{"schemaVersion": 2, "not": "a manifest"}',
    });
    assert.equal(res.status, 400);
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
    const line = lineFor('PUT', '/manifests/v1');
    assert.ok(line, JSON.stringify(lines));
    assert.equal(line.status, 400);
    assert.equal(line.user, 'alice');
    assert.equal(line.error, 'MANIFEST_INVALID');
    assert.equal(typeof line.errorMessage, 'string');
    assert.ok(String(line.errorMessage).length > 10);
  });

  it('a request without credentials is logged with UNAUTHORIZED and no user', async () => {
    await (await fetch(`${url}/v2/_catalog`)).arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
    const line = lineFor('GET', '/v2/_catalog');
    assert.equal(line?.error, 'UNAUTHORIZED');
    assert.equal(line?.user, undefined);
  });

  it('a chunked PATCH (no Content-Length) logs the bytes it sent', async () => {
    const started = await fetch(`${url}/v2/team/app/blobs/uploads/`, { method: 'POST', headers: auth });
    const location = new URL(started.headers.get('location')!, url);
    const body = Buffer.alloc(200_000, 7);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(location, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.write(body.subarray(0, 100_000));
      req.end(body.subarray(100_000));
    });
    assert.equal(status, 202);
    await new Promise((r) => setTimeout(r, 50));
    const line = lineFor('PATCH', '/blobs/uploads/');
    assert.ok(Number(line?.bytesIn) >= 200_000, JSON.stringify(line));
    assert.equal(line?.error, undefined);
  });
});
