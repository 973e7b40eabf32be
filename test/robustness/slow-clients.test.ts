/**
 * Issue 18, "connections and slow bodies": each attack is replayed against a berth child process
 * (its own event loop and descriptors, as in production) from one client address, 127.0.0.2,
 * while an ordinary client on 127.0.0.1 keeps asking; the ordinary client must be served
 * throughout and the attacker's sockets must be let go within the configured bounds
 * (http.limits, src/http/limits.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';

const ATTACKER = '127.0.0.2';

interface Attack {
  /** what each socket received */
  answers: string[];
  /** how long after it opened each socket was closed by the server (undefined: still open) */
  closedAfterMs: (number | undefined)[];
  sockets: Socket[];
  end(): void;
}

/** opens `count` connections from the attacker's address; `start` runs once each is connected */
async function attack(url: string, count: number, start: (socket: Socket) => void, from = ATTACKER): Promise<Attack> {
  const { port } = new URL(url);
  const result: Attack = {
    answers: Array<string>(count).fill(''),
    closedAfterMs: Array<number | undefined>(count).fill(undefined),
    sockets: [],
    end: () => result.sockets.forEach((s) => s.destroy()),
  };
  await Promise.all(
    Array.from({ length: count }, (_, i) => {
      return new Promise<void>((resolve) => {
        const opened = Date.now();
        const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress: from }, () => {
          start(socket);
          resolve();
        });
        socket.on('data', (data) => (result.answers[i] += data.toString('latin1')));
        socket.on('error', () => resolve());
        socket.on('close', () => {
          result.closedAfterMs[i] ??= Date.now() - opened;
          resolve();
        });
        result.sockets.push(socket);
      });
    }),
  );
  return result;
}

/** writes `text` one piece every `everyMs` until the socket closes */
function trickle(socket: Socket, text: () => string, everyMs: number): void {
  const timer = setInterval(() => (socket.writable ? socket.write(text()) : clearInterval(timer)), everyMs);
  socket.once('close', () => clearInterval(timer));
}

/** ordinary requests every 100 ms while `during` runs: the statuses they got */
async function probing(url: string, during: () => Promise<void>, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await fetch(`${url}/v2/`, { headers, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      statuses.push(res?.status ?? 0);
      await res?.arrayBuffer();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    await during();
  } finally {
    running = false;
    await loop;
  }
  return statuses;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

describe('slow and greedy clients (child process, http.limits)', () => {
  let berth: BerthProcess;

  before(async () => {
    berth = await startBerthProcess({
      config: { http: { limits: { connections: 200, connectionsperaddress: 100, headertimeout: '2s', idletimeout: '2s', bodyrate: { minimum: 10_000, window: '1s' } } } },
    });
  });
  after(async () => {
    await berth?.stop();
  });

  it('turns away connections beyond one address\'s share with a readable 503, and serves the other addresses throughout', async () => {
    let flood: Attack | undefined;
    const statuses = await probing(berth.url, async () => {
      // idle sockets: each holds a connection until the header timeout
      flood = await attack(berth.url, 300, () => undefined);
      await until('200 of 300 connections turned away', () => flood!.answers.filter((a) => a.startsWith('HTTP/1.1 503')).length >= 200, 5000);
      await sleep(500);
    });
    try {
      const turnedAway = flood!.answers.filter((a) => a.startsWith('HTTP/1.1 503'));
      assert.equal(turnedAway.length, 200, 'all but 100 of one address\'s 300 connections are turned away');
      assert.match(turnedAway[0], /Retry-After: 1/);
      const body = JSON.parse(turnedAway[0].split('\r\n\r\n')[1]);
      assert.equal(body.errors[0].code, 'UNAVAILABLE');
      assert.match(body.errors[0].message, /connectionsperaddress/);
      assert.ok(statuses.length >= 5 && statuses.every((s) => s === 200), `the ordinary client was served: ${statuses.join(',')}`);
    } finally {
      flood!.end();
    }
    assert.match(berth.logs(), /connection limit reached/);
  });

  it('cuts a request head trickled byte by byte, and a connection that says nothing, at the header timeout', async () => {
    let slow: Attack | undefined;
    let silent: Attack | undefined;
    const statuses = await probing(berth.url, async () => {
      slow = await attack(berth.url, 50, (socket) => {
        socket.write('GET /v2/ HTTP/1.1\r\nHost: x\r\n');
        trickle(socket, () => 'X', 100);
      });
      silent = await attack(berth.url, 50, () => undefined);
      await until('every slow connection closed', () => [...slow!.closedAfterMs, ...silent!.closedAfterMs].every((ms) => ms !== undefined), 10_000);
    });
    try {
      for (const ms of [...slow!.closedAfterMs, ...silent!.closedAfterMs]) assert.ok(ms! >= 1500 && ms! < 6000, `closed ${ms} ms after opening (header timeout 2 s)`);
      assert.ok(slow!.answers.every((a) => a.startsWith('HTTP/1.1 408')), `each slow request gets 408: ${[...new Set(slow!.answers.map((a) => a.split('\r\n')[0]))].join(' / ')}`);
      assert.ok(statuses.length >= 10 && statuses.every((s) => s === 200), `the ordinary client was served: ${statuses.join(',')}`);
    } finally {
      slow!.end();
      silent!.end();
    }
  });

  it('closes a kept-alive connection left idle for the idle timeout', async () => {
    const idle = await attack(berth.url, 1, (socket) => socket.write('GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n'));
    try {
      await until('the idle connection closed', () => idle.closedAfterMs[0] !== undefined, 8000);
      assert.match(idle.answers[0], /^HTTP\/1\.1 200/);
      assert.doesNotMatch(idle.answers[0], /connection: close/i, 'the answer kept the connection alive; the idle timeout closed it');
      assert.ok(idle.closedAfterMs[0]! >= 1500, `closed after ${idle.closedAfterMs[0]} ms (idle timeout 2 s)`);
    } finally {
      idle.end();
    }
  });

  it('cuts a request body slower than the minimum rate, and not a fast one', async () => {
    const post = await fetch(`${berth.url}/v2/slow/body/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 202);
    const location = new URL(post.headers.get('location')!, berth.url);
    const slow = await attack(berth.url, 1, (socket) => {
      socket.write(`PATCH ${location.pathname}${location.search} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n`);
      trickle(socket, () => 'x'.repeat(100), 100); // 1,000 bytes a second against a minimum of 10,000
    });
    try {
      await until('the slow body cut', () => slow.closedAfterMs[0] !== undefined, 8000);
      assert.equal(slow.answers[0], '', 'no answer: the connection is cut');
      assert.match(berth.logs(), /request body slower than http\.limits\.bodyrate\.minimum/);
    } finally {
      slow.end();
    }
    // the same upload, at full speed, goes through: 4 MiB in one PATCH
    const status = await fetch(location, { method: 'GET' });
    assert.equal(status.status, 204, 'the upload itself survives the cut connection');
    const range = status.headers.get('range');
    const offset = range ? Number(range.split('-')[1]) + 1 : 0;
    const fast = await fetch(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-range': `${offset}-${offset + 4 * 1024 * 1024 - 1}` }, body: Buffer.alloc(4 * 1024 * 1024, 1) });
    assert.equal(fast.status, 202);
  });
});

/** one GET /v2/ on a new connection from `from`: its status, or 'reset' when the connection failed */
function askFrom(url: string, from: string): Promise<number | 'reset'> {
  return new Promise((resolve) => {
    const req = request(`${url}/v2/`, { localAddress: from, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', () => resolve('reset'));
    });
    req.on('error', () => resolve('reset'));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

describe('a few addresses holding every connection (issue 26)', () => {
  let berth: BerthProcess;
  const holders = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
  const NEWCOMER = '127.0.0.5';

  before(async () => {
    // 3 × 20 idle sockets fill the 60 connections without reaching the per-address cap (30);
    // the header timeout is long, so nothing but the limits lets them go
    berth = await startBerthProcess({ config: { http: { limits: { connections: 60, connectionsperaddress: 30, headertimeout: '60s', idletimeout: '60s' } } } });
  });
  after(async () => {
    await berth?.stop();
  });

  it('serves a fourth address while three hold every connection idle and reopen each one closed', async () => {
    const attacks: Attack[] = [];
    let reopened = 0;
    let stopped = false;
    // an attacker that opens another idle connection (100 ms) after one of its own is closed
    const hold = async (from: string, count: number): Promise<void> => {
      const reopen = () => setTimeout(() => !stopped && (reopened++, void hold(from, 1)), 100);
      const held = await attack(berth.url, count, (socket) => socket.once('close', reopen), from);
      attacks.push(held);
    };
    try {
      await Promise.all(holders.map((from) => hold(from, 20)));
      await sleep(200);
      const answers: (number | 'reset')[] = [];
      for (let i = 0; i < 30; i++) answers.push(await askFrom(berth.url, NEWCOMER));
      const tally = { ok: answers.filter((a) => a === 200).length, unavailable: answers.filter((a) => a === 503).length, reset: answers.filter((a) => a === 'reset').length };
      assert.deepEqual(tally, { ok: 30, unavailable: 0, reset: 0 }, `the fourth address is served: ${answers.join(',')}`);
      // the holders' reopened connections found no room: equal holders do not take from each other
      const openHeld = attacks.flatMap((a) => a.sockets).filter((s) => !s.destroyed && s.readyState === 'open').length;
      assert.ok(openHeld <= 60, `holders keep at most the limit: ${openHeld}`);
      assert.ok(reopened > 0, 'some of the holders\' connections were reclaimed');
    } finally {
      stopped = true;
      for (const held of attacks) held.end();
    }
    assert.match(berth.logs(), /connection limit reached/);
  });
});

describe('a body trickled after an error answer (htpasswd)', () => {
  let berth: TestRegistry;

  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-slow-'));
    const htpasswd = join(dir, 'htpasswd');
    await writeHtpasswd(htpasswd, { alice: 'secret' });
    // in process: the child-process helper waits for a 200 from /v2/, which htpasswd refuses
    berth = await startBerth({ auth: { htpasswd: { realm: 'test', path: htpasswd } } });
  });
  after(async () => {
    await berth?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 401 and closes at once instead of reading a declared 1 TB body', async () => {
    let trickling: Attack | undefined;
    const statuses = await probing(
      berth.url,
      async () => {
        trickling = await attack(berth.url, 80, (socket) => {
          socket.write('PATCH /v2/a/blobs/uploads/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n');
          trickle(socket, () => 'x', 200);
        });
        await until('every trickling connection closed', () => trickling!.closedAfterMs.every((ms) => ms !== undefined), 5000);
      },
      { authorization: basic('alice', 'secret') },
    );
    try {
      assert.ok(trickling!.answers.every((a) => a.startsWith('HTTP/1.1 401') && /connection: close/i.test(a)), 'each gets 401 with Connection: close');
      assert.ok(trickling!.closedAfterMs.every((ms) => ms! < 3000), `closed after ${Math.max(...trickling!.closedAfterMs.map(Number))} ms at most`);
      assert.ok(statuses.every((s) => s === 200), `the ordinary client was served: ${statuses.join(',')}`);
    } finally {
      trickling!.end();
    }
  });
});
