/**
 * The remote of a replication rule sends its credentials only to the remote's own site: an upload
 * Location or a listing's next page on another site is refused, and nothing reaches that site.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Remote } from '../../src/replication/remote.js';

function listen(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

describe('replication remote: credentials stay on the remote', () => {
  let remote: { server: Server; url: string };
  let elsewhere: { server: Server; url: string };
  const elsewhereSaw: string[] = [];

  before(async () => {
    elsewhere = await listen((req, res) => {
      elsewhereSaw.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.statusCode = 201;
      res.end();
    });
    remote = await listen((req, res) => {
      if (!req.headers.authorization) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="r"' }).end();
        return;
      }
      if (req.method === 'POST') {
        res.writeHead(202, { location: `${elsewhere.url.replace('127.0.0.1', 'localhost')}/v2/x/blobs/uploads/u1` }).end();
        return;
      }
      if (req.url?.startsWith('/v2/_catalog')) {
        res.writeHead(200, { 'content-type': 'application/json', link: `<${elsewhere.url}/v2/_catalog?last=a&n=1>; rel="next"` }).end(JSON.stringify({ repositories: ['a'] }));
        return;
      }
      res.writeHead(404).end();
    });
  });
  after(() => {
    for (const { server } of [remote, elsewhere]) {
      server.closeAllConnections();
      server.close();
    }
  });

  const client = () => new Remote({ url: remote.url, username: 'u', password: 'secret' }, pino({ level: 'silent' }));

  it('refuses an upload Location on another site', { timeout: 10_000 }, async () => {
    await assert.rejects(client().pushBlob('x', `sha256:${'a'.repeat(64)}`, 1, async () => Readable.from([Buffer.from('a')])), /upload location on another site/);
    assert.deepEqual(elsewhereSaw, []);
  });

  it('refuses a next page on another site', { timeout: 10_000 }, async () => {
    const names: string[] = [];
    await assert.rejects(async () => {
      for await (const name of client().catalog()) names.push(name);
    }, /next page on another site/);
    assert.deepEqual(names, ['a']);
    assert.deepEqual(elsewhereSaw, []);
  });
});
