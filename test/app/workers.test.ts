/**
 * http.workers: several worker processes on one port (src/workers/). Connections are spread over
 * the workers and one upload's PATCHes are continued by whichever worker gets them; the primary's
 * debug listener sums every worker's figures; a worker killed with SIGKILL under load is started
 * again while the other keeps answering; SIGTERM stops them all. And the configuration's rules.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { randomBlob } from '../helpers/blobs.js';
import { freePort } from '../helpers/ports.js';
import { waitForHttp } from '../helpers/processes.js';

/** a request on a connection of its own (round robin hands each new connection to the next worker) */
function send(url: string, method: string, body?: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers: body ? { 'content-type': 'application/octet-stream', 'content-length': body.length, ...headers } : headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // a connection handed to a worker at the moment it dies gets no answer: a failure, not a hang
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.end(body);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('http.workers: 2', () => {
  let berth: BerthProcess;
  let debug: string;
  const workerPids = async (): Promise<number[]> => ((await (await fetch(`${debug}/debug/vars`)).json()) as { workers: { pid: number }[] }).workers.map((w) => w.pid);

  before(async () => {
    const debugPort = await freePort();
    debug = `http://127.0.0.1:${debugPort}`;
    berth = await startBerthProcess({
      config: { log: { level: 'info', formatter: 'json', accesslog: { disabled: false } }, http: { workers: 2, debug: { addr: `127.0.0.1:${debugPort}`, prometheus: { enabled: true } } } },
    });
    // the first worker answers before the second is up and the primary's debug listener starts
    await waitForHttp(`${debug}/debug/vars`, { timeoutMs: 30_000, name: 'the primary debug listener' });
  });
  after(() => berth?.stop());

  it('spreads connections over both workers; an upload continues on whichever gets its PATCH; the debug listener sums them', async () => {
    assert.equal((await workerPids()).length, 2);
    const blob = randomBlob(4 * 64 * 1024);
    const started = await send(`${berth.url}/v2/spread/app/blobs/uploads/`, 'POST');
    assert.equal(started.status, 202);
    let location = new URL(String(started.headers.location), berth.url).toString();
    for (let i = 0; i < 4; i++) {
      const chunk = blob.data.subarray(i * 65536, (i + 1) * 65536);
      const res = await send(location, 'PATCH', chunk, { 'content-range': `${i * 65536}-${(i + 1) * 65536 - 1}` });
      assert.equal(res.status, 202, res.text);
      location = new URL(String(res.headers.location), berth.url).toString();
    }
    const put = new URL(location);
    put.searchParams.set('digest', blob.digest);
    assert.equal((await send(put.toString(), 'PUT')).status, 201);
    const got = await fetch(`${berth.url}/v2/spread/app/blobs/${blob.digest}`);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(blob.data));

    const patches = berth
      .logs()
      .split('\n')
      .filter((line) => line.includes('"method":"PATCH"'))
      .map((line) => (JSON.parse(line) as { worker: number }).worker);
    assert.deepEqual([...new Set(patches)].sort(), [0, 1], `PATCHes by worker: ${patches.join(',')}`);

    const metrics = await (await fetch(`${debug}/metrics`)).text();
    const patchCount = metrics.split('\n').find((l) => l.startsWith('berth_http_requests_total{') && l.includes('method="PATCH"') && l.includes('code="202"'));
    assert.equal(Number(patchCount?.split(' ').pop()), 4, 'the sum over both workers');
    assert.equal((await fetch(`${debug}/debug/health`)).status, 200);
  });

  it('starts a worker killed with SIGKILL again; the other keeps answering meanwhile', async () => {
    const [, victim] = await workerPids();
    let ok = 0;
    let failed = 0;
    const load = (async () => {
      for (let i = 0; i < 150; i++) {
        const res = await send(`${berth.url}/v2/`, 'GET').catch(() => undefined);
        if (res?.status === 200) ok++;
        else failed++;
      }
    })();
    await sleep(100);
    process.kill(victim, 'SIGKILL');
    await load;
    console.log(`# workers: ${ok} of 150 requests answered while worker 1 was killed and started again, ${failed} failed`);
    assert.ok(ok >= 140, `${ok} answered, ${failed} failed while a worker was killed`);
    let pids: number[] = [];
    for (let waited = 0; waited < 20_000; waited += 200) {
      pids = await workerPids();
      if (pids.length === 2 && !pids.includes(victim)) break;
      await sleep(200);
    }
    assert.equal(pids.length, 2);
    assert.ok(!pids.includes(victim), 'a new worker in its place');
    assert.match(berth.logs(), /worker 1 died; starting it again/);
  });

  it('SIGTERM stops every worker and the primary', async () => {
    const pids = await workerPids();
    const status = await berth.stop();
    assert.equal(status.code, 0, berth.logs().slice(-2000));
    for (const pid of pids) assert.equal(alive(pid), false, `worker ${pid} is gone`);
  });
});

describe('http.workers: 2, htpasswd without Redis', () => {
  let berth: BerthProcess;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-workers-login-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'secret' });
    berth = await startBerthProcess({
      config: { log: { level: 'info', accesslog: { disabled: true } }, http: { workers: 2 }, auth: { htpasswd: { realm: 'test', path: join(dir, 'htpasswd') }, failedlogins: { burst: 4, every: '1h' } } },
      readyStatus: 401,
    });
    // the second worker starts after the first answers: the primary says when both serve
    const deadline = Date.now() + 30_000;
    while (!/serving with 2 worker processes/.test(berth.logs())) {
      if (Date.now() > deadline) throw new Error(`the second worker did not start:\n${berth.logs()}`);
      await sleep(50);
    }
  });
  after(async () => {
    await berth?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives each worker its share of the failed-login buckets, so the workers together allow the configured burst', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await send(`${berth.url}/v2/`, 'GET', undefined, { authorization: basic('alice', `wrong-${i}`) })).status);
    const refused = statuses.filter((s) => s === 401).length;
    // four buckets' worth over two workers: 2 + 2 (each worker's share), not 4 + 4
    assert.ok(refused >= 2 && refused <= 5, `wrong passwords checked before 429: ${refused} (${statuses.join(',')})`);
    assert.equal(statuses.filter((s) => s === 429).length, 12 - refused);
  });
});

describe('http.workers configuration', () => {
  const config = (extra: object) => validateConfig({ version: '0.1', storage: { inmemory: {} }, ...extra }, 't');
  it('1 by default; auto is one per core; a limiter per process is refused with several workers unless Redis shares it', () => {
    assert.equal(config({}).http.workers, 1);
    assert.ok(config({ http: { workers: 'auto' } }).http.workers >= 1);
    assert.equal(config({ http: { workers: '3' } }).http.workers, 3);
    assert.throws(() => config({ http: { workers: 0 } }), /http\.workers/);
    assert.throws(() => config({ http: { workers: 2 }, ratelimit: { rate: 10, burst: 20 } }), /ratelimit: with several workers each would keep its own buckets/);
    assert.equal(config({ http: { workers: 2 }, ratelimit: { rate: 10, burst: 20 }, redis: { addr: '127.0.0.1:6379' } }).http.workers, 2);
  });
});
