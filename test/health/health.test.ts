/**
 * Distribution's `health:` checks and the probes: while a check fails every request answers 503
 * UNAVAILABLE, /readyz and /debug/health name it, /livez stays 200; when it passes again the
 * registry serves. Real files, sockets, HTTP servers and (for the storage check) the Ceph store,
 * frozen with SIGSTOP.
 */
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createTCPServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { sharedCeph, stopSharedCeph, useOwnCeph } from '../helpers/ceph.js';
import { loadConfig } from '../../src/config/load.js';

useOwnCeph(); // radosgw is frozen (SIGSTOP) here: not the suite's Ceph, which other files use meanwhile

const FAST = { interval: '100ms' };

/** polls `url` until it answers `status` (the checks run in the background), or fails after 10 s */
async function eventually(url: string, status: number): Promise<Response> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await fetch(url);
    if (response.status === status || Date.now() > deadline) return response;
    await response.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function withRegistry(overrides: Overrides, body: (registry: TestRegistry) => Promise<void>, driver: 'filesystem' | 's3' = 'filesystem'): Promise<void> {
  const registry = await startBerth(overrides, { driver });
  try {
    await body(registry);
  } finally {
    await registry.stop();
  }
}

describe('health checks (Distribution\'s health: block)', () => {
  after(() => stopSharedCeph());

  it('a file check: while the file exists every request answers 503 UNAVAILABLE; /readyz and /debug/health name it; /livez stays 200', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-health-'));
    const maintenance = join(dir, 'down');
    try {
      await withRegistry({ health: { file: [{ file: maintenance, ...FAST }] }, http: { debug: { addr: '127.0.0.1:0' } } }, async ({ url, app }) => {
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
        assert.deepEqual(await (await fetch(`${url}/readyz`)).json(), { status: 'ready' });
        assert.equal((await fetch(`${url}/`)).status, 200);

        await writeFile(maintenance, '');
        const refused = await eventually(`${url}/v2/`, 503);
        assert.equal(refused.status, 503);
        assert.equal(refused.headers.get('retry-after'), '10');
        const body = (await refused.json()) as { errors: { code: string; message: string }[] };
        assert.equal(body.errors[0].code, 'UNAVAILABLE');
        assert.match(body.errors[0].message, /health check fails/);
        assert.ok(!body.errors[0].message.includes(maintenance), 'the reason is for operators, not for every client');
        assert.equal((await fetch(`${url}/v2/library/x/manifests/latest`)).status, 503);
        assert.equal((await fetch(`${url}/`)).status, 503);

        const ready = await fetch(`${url}/readyz`);
        assert.equal(ready.status, 503);
        assert.deepEqual(await ready.json(), { status: 'not ready', failing: { [maintenance]: `${maintenance}: file exists` } });
        assert.equal((await fetch(`${url}/livez`)).status, 200);
        const debug = await fetch(`${app.debugURL}/debug/health`);
        assert.equal(debug.status, 503);
        assert.deepEqual(await debug.json(), { [maintenance]: `${maintenance}: file exists` });

        await rm(maintenance);
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
        assert.equal((await fetch(`${app.debugURL}/debug/health`)).status, 200);
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a TCP check: a closed port fails it (after the threshold: test/health/monitor.unit.test.ts), a listening one passes', async () => {
    const listener = createTCPServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as AddressInfo).port;
    const addr = `127.0.0.1:${port}`;
    try {
      await withRegistry({ health: { tcp: [{ addr, threshold: 3, timeout: '500ms', ...FAST }] } }, async ({ url }) => {
        assert.equal((await eventually(`${url}/readyz`, 200)).status, 200);
        await new Promise<void>((resolve) => listener.close(() => resolve()));
        const failing = await eventually(`${url}/readyz`, 503);
        assert.equal(failing.status, 503);
        assert.match(((await failing.json()) as { failing: Record<string, string> }).failing[addr], /connection failed/);
        assert.equal((await fetch(`${url}/v2/`)).status, 503);
        await new Promise<void>((resolve) => listener.listen(port, '127.0.0.1', resolve));
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
      });
    } finally {
      listener.close();
    }
  });

  it('an HTTP check: HEAD of the URI must answer the expected status, with the configured headers', async () => {
    let status = 204;
    const seen: (string | undefined)[] = [];
    const server: Server = createServer((req, res) => {
      seen.push(`${req.method} ${req.headers['x-probe']}`);
      res.writeHead(status).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ping`;
    try {
      await withRegistry({ health: { http: [{ uri, statuscode: 204, headers: { 'X-Probe': ['berth'] }, ...FAST }] } }, async ({ url }) => {
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
        assert.ok(seen.includes('HEAD berth'), JSON.stringify(seen));
        status = 500;
        const failing = await eventually(`${url}/readyz`, 503);
        assert.deepEqual(((await failing.json()) as { failing: Record<string, string> }).failing, { [uri]: `${uri}: answered 500, expected 204` });
        status = 204;
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
      });
    } finally {
      server.close();
    }
  });

  it('the storage check on S3 fails while the store does not answer (radosgw frozen) and recovers', async () => {
    const { ceph } = await sharedCeph();
    const rgw = Number(readFileSync(join(ceph.dir, 'run', 'rgw.pid'), 'utf8'));
    await withRegistry(
      { health: { storagedriver: { enabled: true, interval: '200ms', threshold: 2, timeout: '500ms' } } },
      async ({ url }) => {
        assert.equal((await eventually(`${url}/readyz`, 200)).status, 200);
        process.kill(rgw, 'SIGSTOP');
        try {
          const failing = await eventually(`${url}/readyz`, 503);
          assert.equal(failing.status, 503);
          assert.match(((await failing.json()) as { failing: Record<string, string> }).failing.storagedriver_s3, /no answer within 500ms/);
          const refused = await fetch(`${url}/v2/`);
          assert.equal(refused.status, 503);
        } finally {
          process.kill(rgw, 'SIGCONT');
        }
        assert.equal((await eventually(`${url}/v2/`, 200)).status, 200);
      },
      's3',
    );
  });

  it('without health checks, /readyz probes the store live and /livez answers; nothing is refused', async () => {
    await withRegistry({}, async ({ url }) => {
      assert.deepEqual(await (await fetch(`${url}/readyz`)).json(), { status: 'ready' });
      assert.deepEqual(await (await fetch(`${url}/livez`)).json(), { status: 'live' });
      assert.equal((await fetch(`${url}/readyz`, { method: 'HEAD' })).status, 200);
    });
  });
});

describe("Distribution's configurations as they are", () => {
  it("Debian's stock /etc/docker/registry/config.yml loads (health, log.fields, cache.blobdescriptor)", { skip: !existsSync('/etc/docker/registry/config.yml') && !process.env.CI && 'docker-registry is not installed' }, async () => {
    const { config } = await loadConfig('/etc/docker/registry/config.yml', {});
    assert.equal(config.health?.storagedriver?.enabled, true);
    assert.equal(config.health?.storagedriver?.interval, 10_000);
    assert.equal(config.health?.storagedriver?.threshold, 3);
  });
});
