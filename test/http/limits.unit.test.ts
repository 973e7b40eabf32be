/** Units of http.limits (src/http/limits.ts): the configuration, the automatic connection limits. */
import assert from 'node:assert/strict';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { connectionLimits, descriptorLimit, watchBodyRate } from '../../src/http/limits.js';

const config = (limits: Record<string, unknown>) => validateConfig({ version: '0.1', storage: { inmemory: {} }, http: { limits } }, 't');

function problems(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
}

describe('http.limits', () => {
  it('has defaults that bound every slow client', () => {
    const { limits } = config({}).http;
    assert.deepEqual(limits, { connections: 'auto', connectionsperaddress: 'auto', headertimeout: 20_000, idletimeout: 75_000, bodyrate: { minimum: 1024, window: 20_000 } });
    const worked = connectionLimits(limits);
    assert.equal(worked.connections, Math.floor(descriptorLimit() * 0.75), 'auto: three quarters of the open-file limit');
    assert.equal(worked.perAddress, Math.floor(worked.connections / 2), 'auto: one address may hold half');
  });

  it('takes numbers, and never lets one address hold more than all', () => {
    const worked = connectionLimits(config({ connections: 100, connectionsperaddress: 500, bodyrate: { minimum: 0 } }).http.limits);
    assert.equal(worked.connections, 100);
    assert.equal(worked.perAddress, 100);
    assert.equal(worked.bodyRate.minimum, 0);
  });

  it('refuses values that would disable a bound by mistake, naming the key', () => {
    const text = problems(() => config({ connections: 0, headertimeout: '0s', idletimeout: 'soon', bodyrate: { window: '10ms', minimum: -1 }, maxbody: 1 }));
    assert.match(text, /^http\.limits\.connections: /m);
    assert.match(text, /^http\.limits\.headertimeout: expected a duration above 0/m);
    assert.match(text, /^http\.limits\.idletimeout: expected a duration/m);
    assert.match(text, /^http\.limits\.bodyrate\.window: expected a duration of at least 1s/m);
    assert.match(text, /^http\.limits\.bodyrate\.minimum: /m);
    assert.match(text, /^http\.limits\.maxbody: unknown key/m);
  });

  it('reads the soft open-file limit, and assumes 1,024 when it cannot', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-limits-'));
    try {
      const file = join(dir, 'limits');
      await writeFile(file, 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            4096                 524288               files\n');
      assert.equal(descriptorLimit(file), 4096);
      await writeFile(file, 'Max open files            unlimited            unlimited            files\n');
      assert.equal(descriptorLimit(file), 1024);
      assert.equal(descriptorLimit(join(dir, 'missing')), 1024);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('watchBodyRate', () => {
  it('leaves no listener on a keep-alive socket after each request', async () => {
    const counts: number[] = [];
    const server = createServer((req, res) => {
      watchBodyRate(req, { minimum: 1, windowMs: 60_000 }, () => {});
      req.resume();
      req.on('end', () => {
        res.end('ok');
        // counted after the request's own listeners ran: only the watch's leftovers remain
        setImmediate(() => counts.push(req.socket.listenerCount('close')));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 20; i++) {
        await new Promise<void>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, method: 'PUT', path: '/', agent, headers: { 'content-length': '3' } }, (res) => {
            res.resume();
            res.on('end', resolve);
          });
          req.on('error', reject);
          req.end('abc');
        });
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(counts.length, 20);
      assert.equal(counts[19], counts[0], `close listeners grew from ${counts[0]} to ${counts[19]} over 20 requests on one socket`);
    } finally {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
