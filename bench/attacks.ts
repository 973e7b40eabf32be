/**
 * `npm run bench:attacks`: replays the denial-of-service attacks of issue 18 against berth and
 * CNCF Distribution (Debian's docker-registry) and prints one table. Not in CI: it takes a few
 * minutes and its figures depend on the machine.
 *
 * For each attack and registry: a fresh registry process (descriptor limit FD_LIMIT, through
 * `sh -c 'ulimit -n ...; exec ...'`) on a storage root of its own holding the fixtures; a probe
 * client sends an ordinary request every 100 ms on a new connection (GET /v2/ and a manifest
 * HEAD in turn, 5 s timeout) while the attack runs for ATTACK_SECONDS; then the attack stops and
 * the registry is stopped by its PID. Reported: probes served and failed, the p99 latency of all
 * probes (a failed one counts with the time it took to fail), the peaks of RSS and of open
 * descriptors (/proc/PID/status, /proc/PID/fd, sampled every 100 ms), the CPU seconds the
 * registry used during the attack (/proc/PID/stat), its RSS 3 s after the attack, and what the
 * attacker saw.
 *
 * Connection attacks open a connection again 100 ms after the server closes one, as an attacker
 * would, from 127.0.0.2 (the probe uses 127.0.0.1); the attacker and the probe share this
 * process, so a probe's latency includes its delays.
 *
 * Env: ATTACK_SECONDS (default 20), ATTACKS_ONLY=word,word (attacks whose name contains one:
 * index, schema1, slowloris, 401, stalled, catalog), REGISTRIES_ONLY=berth|distribution.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { buildBerth, distributionVersion } from './lib/registries.js';
import { cpuSeconds } from './lib/process-stats.js';
import { filePut, smallImage, writeSmallFixtures, SMALL_REPO, type SmallImage } from './lib/fixtures.js';
import { send } from './lib/http.js';
import { MiB, percentile } from './lib/stats.js';
import { REPO_ROOT } from '../test/helpers/berth-process.js';
import { freePort } from '../test/helpers/ports.js';
import { cleanEnv, killPid, spawnLogged, waitForHttp, type LoggedProcess } from '../test/helpers/processes.js';
import { REFERENCE_REGISTRY_BIN, referenceRegistryConfig } from '../test/helpers/reference-registry.js';
import { basic, writeHtpasswd } from '../test/helpers/auth.js';
import { bigSchema1, repeatSignature } from '../test/registry/manifests/sign-schema1.js';
import * as layout from '../src/registry/layout.js';
import type { Digest } from '../src/registry/digest.js';

const FD_LIMIT = 4096;
const SECONDS = Number(process.env.ATTACK_SECONDS ?? 20);
const PROBE_EVERY_MS = 100;
const PROBE_TIMEOUT_MS = 5000;
const USER = { name: 'alice', password: 'alice-pw' };
/** may log in, may read no repository (berth: no auth.access rule names them) */
const NOBODY = { name: 'nobody', password: 'nobody-pw' };
const CATALOG_REPOS = 3000;
const BIG_BLOB = 64 * MiB;

type RegistryName = 'berth' | 'distribution';

interface Fixtures {
  image: SmallImage;
  bigBlob: Digest;
}

interface Target {
  name: RegistryName;
  url: string;
  pid: number;
  /** the probe's Authorization header (undefined: anonymous) */
  probeAuth?: string;
  stop(): Promise<void>;
}

interface Attack {
  name: string;
  /** the catalog attack runs Distribution without authentication (it has no per-repository access with htpasswd) */
  anonymousDistribution?: boolean;
  /** runs until `until` (a performance.now() time); returns what the attacker saw */
  run(target: Target, until: number, fixtures: Fixtures): Promise<string>;
}

/** what the attacker's requests got: status or error -> count */
class Tally {
  private readonly counts = new Map<string, number>();
  add(what: string | number): void {
    this.counts.set(String(what), (this.counts.get(String(what)) ?? 0) + 1);
  }
  toString(): string {
    return [...this.counts].map(([k, n]) => `${k} x${n}`).join(', ') || 'nothing';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const short = (err: unknown) => ((err as NodeJS.ErrnoException).code ?? (err as Error).message.replace(/^.*: /, '')).slice(0, 30);

/** `workers` loops sending `request` until `until` */
async function loop(workers: number, until: number, request: () => Promise<number>): Promise<string> {
  const tally = new Tally();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < until) {
        try {
          tally.add(await request());
        } catch (err) {
          tally.add(short(err));
          await sleep(100);
        }
      }
    }),
  );
  return tally.toString();
}

/** an OCI index listing one child 37,000 times, as small as its descriptors allow (under 4 MiB, the manifest limit of both) */
function hugeIndex(child: SmallImage): Buffer {
  const descriptor = { mediaType: 'a', digest: child.manifestDigest, size: child.manifest.length };
  const body = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: Array(37_000).fill(descriptor) }));
  if (body.length > 4 * MiB) throw new Error(`the index is ${body.length} bytes, over 4 MiB`);
  return body;
}


/**
 * `count` raw connections kept open until `until`: each is opened, sends `start`, then one byte of
 * `trickle` every second. A connection the server closes is counted and opened again, as an
 * attacker would. `paused`: never read what the server sends.
 */
/**
 * Connection attacks come from an address of their own (Linux routes all of 127/8 to loopback),
 * as an attacker's would: the probe on 127.0.0.1 stands for the other clients, which a limit per
 * client address (berth's http.limits.connectionsperaddress) is there to keep serving.
 */
const ATTACKER_ADDRESS = '127.0.0.2';

async function holdConnections(target: Target, until: number, count: number, start: string, trickle: string, paused = false): Promise<string> {
  const { hostname, port } = new URL(target.url);
  const tally = new Tally();
  const sockets = new Set<Socket>();
  let timer: NodeJS.Timeout | undefined;
  const open = () => {
    if (performance.now() >= until) return;
    const socket = connect({ host: hostname, port: Number(port), localAddress: ATTACKER_ADDRESS });
    sockets.add(socket);
    let answered = false;
    socket.on('connect', () => {
      socket.write(start);
      if (paused) socket.pause();
    });
    socket.on('data', (chunk: Buffer) => {
      if (!answered) tally.add(`answered ${/^HTTP\/1\.1 (\d+)/.exec(chunk.toString('latin1'))?.[1] ?? '?'}`);
      answered = true;
    });
    socket.on('error', (err) => tally.add(short(err)));
    socket.on('close', () => {
      sockets.delete(socket);
      if (performance.now() < until) {
        tally.add('closed by the server');
        setTimeout(open, 100);
      }
    });
  };
  try {
    // open them at 500 a second, as a client can
    for (let i = 0; i < count && performance.now() < until; i++) {
      open();
      if (i % 50 === 49) await sleep(100);
    }
    let byte = 0;
    timer = setInterval(() => {
      if (trickle === '') return;
      const c = trickle[byte++ % trickle.length];
      for (const s of sockets) if (s.writable && !s.connecting) s.write(c);
    }, 1000);
    await sleep(Math.max(0, until - performance.now()));
    return `${sockets.size} of ${count} open at the end; ${tally}`;
  } finally {
    clearInterval(timer);
    for (const s of sockets) s.destroy();
  }
}

const ATTACKS: Attack[] = [
  {
    name: 'index listing one child 37,000 times',
    async run(target, until, { image }) {
      const body = hugeIndex(image);
      const headers = { 'content-type': 'application/vnd.oci.image.index.v1+json', authorization: basic(USER.name, USER.password), 'content-length': body.length };
      return loop(4, until, async () => (await send('PUT', `${target.url}/v2/${SMALL_REPO}/manifests/huge-index`, { headers, body: [body], timeoutMs: 60_000 })).status);
    },
  },
  {
    name: 'schema1 with one signature 1,000 times',
    async run(target, until, { image }) {
      // a 0.5 MB payload with its one signature repeated 1,000 times
      const body = repeatSignature(bigSchema1(SMALL_REPO, 'attack', 512 * 1024, image.layer.digest), 1000);
      const headers = { 'content-type': 'application/vnd.docker.distribution.manifest.v1+prettyjws', authorization: basic(USER.name, USER.password), 'content-length': body.length };
      return loop(4, until, async () => (await send('PUT', `${target.url}/v2/${SMALL_REPO}/manifests/attack`, { headers, body: [body], timeoutMs: 120_000 })).status);
    },
  },
  {
    name: '2,000 slowloris connections (headers trickled)',
    run: (target, until) => holdConnections(target, until, 2000, `GET /v2/ HTTP/1.1\r\nHost: registry\r\nX-Slow: `, 'abcdefgh'),
  },
  {
    name: '2,000 slow bodies of 1 TB after a 401',
    run: (target, until) =>
      holdConnections(target, until, 2000, `POST /v2/${SMALL_REPO}/blobs/uploads/ HTTP/1.1\r\nHost: registry\r\nContent-Type: application/octet-stream\r\nContent-Length: ${2 ** 40}\r\n\r\n`, 'x'),
  },
  {
    name: '300 stalled downloads of a 64 MiB blob',
    run: (target, until, { bigBlob }) =>
      holdConnections(target, until, 300, `GET /v2/${SMALL_REPO}/blobs/${bigBlob} HTTP/1.1\r\nHost: registry\r\nAuthorization: ${basic(USER.name, USER.password)}\r\n\r\n`, '', true),
  },
  {
    name: '/v2/_catalog?n=1, a user who may read none of 3,000',
    anonymousDistribution: true,
    async run(target, until) {
      const headers: Record<string, string> = target.name === 'berth' ? { authorization: basic(NOBODY.name, NOBODY.password) } : {};
      return loop(4, until, async () => (await send('GET', `${target.url}/v2/_catalog?n=1`, { headers, timeoutMs: 120_000 })).status);
    },
  },
];

/** fixtures both registries read (the layout they share): the small image, 3,000 repositories, a 64 MiB blob */
async function writeFixtures(root: string, image: SmallImage, big: Buffer, bigDigest: Digest): Promise<void> {
  await writeSmallFixtures(root, image, { tags: 0, repos: CATALOG_REPOS });
  await filePut(root)(layout.blobData(bigDigest), big);
  await filePut(root)(layout.layerLink(SMALL_REPO, bigDigest), bigDigest);
}

/** runs `argv` under the descriptor limit; the shell execs, so the PID is the registry's */
function spawnLimited(argv: string[], label: string): Promise<LoggedProcess> {
  return spawnLogged('sh', ['-c', `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, ...argv], { cwd: REPO_ROOT, env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }), label });
}

interface StartSpec {
  name: RegistryName;
  root: string;
  htpasswd: string;
  anonymous: boolean;
  cli: string;
  dir: string;
}

async function startTarget(spec: StartSpec): Promise<Target> {
  const configFile = join(spec.dir, `${spec.name}.yml`);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const auth = spec.anonymous ? {} : { auth: { htpasswd: { realm: 'attacks', path: spec.htpasswd } } };
    let config: Record<string, unknown>;
    if (spec.name === 'berth') {
      config = {
        version: '0.1',
        log: { level: 'warn', accesslog: { disabled: true } },
        storage: { filesystem: { rootdirectory: spec.root }, delete: { enabled: true }, maintenance: { uploadpurging: { enabled: false } } },
        http: { addr: `127.0.0.1:${port}`, secret: 'berth-attacks-secret' },
        ...(spec.anonymous ? {} : { auth: { ...auth.auth, access: { '**': { [USER.name]: ['pull', 'push', 'delete'] } } } }),
      };
    } else {
      // schema1 enabled as on berth (its default), so that the signature attack reaches the checks
      config = referenceRegistryConfig({
        rootdirectory: spec.root,
        port,
        deleteEnabled: true,
        config: { log: { level: 'warn', accesslog: { disabled: true } }, compatibility: { schema1: { enabled: true } }, ...auth },
      });
    }
    await writeFile(configFile, stringify(config));
    const argv = spec.name === 'berth' ? [process.execPath, spec.cli, 'serve', configFile] : [REFERENCE_REGISTRY_BIN, 'serve', configFile];
    const proc = await spawnLimited(argv, `${spec.name}:${port}`);
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${url}/v2/`, { process: proc, timeoutMs: 30_000, status: spec.anonymous ? 200 : 401, name: spec.name });
    } catch (err) {
      await killPid(proc, { graceMs: 1000 }).catch(() => undefined);
      if (attempt < 2 && /EADDRINUSE|address already in use/i.test(proc.logs())) continue;
      throw err;
    }
    return {
      name: spec.name,
      url,
      pid: proc.pid,
      probeAuth: spec.anonymous ? undefined : basic(USER.name, USER.password),
      stop: () => killPid(proc, { graceMs: 5000 }),
    };
  }
}

interface Probes {
  served: number;
  failed: number;
  p99: number;
}

/** an ordinary client: a request every 100 ms on a new connection until `stop` resolves */
async function probe(target: Target, stop: Promise<void>): Promise<Probes> {
  const headers: Record<string, string> = target.probeAuth ? { authorization: target.probeAuth } : {};
  const results: { ok: boolean; ms: number }[] = [];
  const pending: Promise<void>[] = [];
  let stopped = false;
  void stop.then(() => (stopped = true));
  for (let i = 0; !stopped; i++) {
    const [method, path] = i % 2 === 0 ? ['GET', '/v2/'] : ['HEAD', `/v2/${SMALL_REPO}/manifests/latest`];
    const started = performance.now();
    pending.push(
      send(method, `${target.url}${path}`, { headers: { ...headers, accept: 'application/vnd.oci.image.manifest.v1+json' }, timeoutMs: PROBE_TIMEOUT_MS }).then(
        (answer) => void results.push({ ok: answer.status === 200, ms: answer.ms }),
        () => void results.push({ ok: false, ms: performance.now() - started }),
      ),
    );
    await sleep(PROBE_EVERY_MS);
  }
  await Promise.all(pending);
  const served = results.filter((r) => r.ok).length;
  return { served, failed: results.length - served, p99: percentile(results.map((r) => r.ms), 99) };
}

interface Peaks {
  rss: number;
  fds: number;
}

function rssOf(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** samples RSS and open descriptors every 100 ms until `stop` resolves */
async function sample(pid: number, stop: Promise<void>): Promise<Peaks> {
  const peaks = { rss: 0, fds: 0 };
  let stopped = false;
  void stop.then(() => (stopped = true));
  while (!stopped) {
    try {
      peaks.rss = Math.max(peaks.rss, rssOf(pid));
      peaks.fds = Math.max(peaks.fds, readdirSync(`/proc/${pid}/fd`).length);
    } catch {
      // the process is gone: the table says so through the probes
    }
    await sleep(100);
  }
  return peaks;
}

interface Row {
  attack: string;
  registry: string;
  probes: Probes;
  peaks: Peaks;
  cpu: number;
  rssAfter: number;
  attacker: string;
}

async function runOne(attack: Attack, spec: StartSpec, fixtures: Fixtures): Promise<Row> {
  const anonymous = spec.name === 'distribution' && attack.anonymousDistribution === true;
  const target = await startTarget({ ...spec, anonymous });
  try {
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const cpu0 = cpuSeconds(target.pid);
    const probes = probe(target, done);
    const peaks = sample(target.pid, done);
    const until = performance.now() + SECONDS * 1000;
    let attacker: string;
    try {
      attacker = await attack.run(target, until, fixtures);
    } catch (err) {
      attacker = `attack failed: ${(err as Error).message}`;
    }
    finish();
    const row = { probes: await probes, peaks: await peaks };
    const cpu = cpuSeconds(target.pid) - cpu0;
    await sleep(3000);
    let rssAfter = 0;
    try {
      rssAfter = rssOf(target.pid);
    } catch {
      // gone
    }
    return { attack: attack.name, registry: anonymous ? `${spec.name} (anonymous)` : spec.name, ...row, cpu, rssAfter, attacker };
  } finally {
    await target.stop();
  }
}

function table(rows: Row[]): string {
  const mib = (n: number) => (n / MiB).toFixed(0);
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [
    line(['attack', 'registry', 'probes served', 'probes failed', 'probe p99 ms', 'peak RSS MiB', 'RSS 3 s after MiB', 'peak fds', 'CPU s', 'what the attacker saw']),
    line(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']),
    ...rows.map((r) => line([r.attack, r.registry, r.probes.served, r.probes.failed, r.probes.p99.toFixed(0), mib(r.peaks.rss), mib(r.rssAfter), r.peaks.fds, r.cpu.toFixed(1), r.attacker])),
  ].join('\n');
}

async function main(): Promise<void> {
  const only = process.env.ATTACKS_ONLY?.split(',').map((s) => s.trim());
  const attacks = ATTACKS.filter((a) => !only || only.some((o) => a.name.includes(o)));
  const registries = (['berth', 'distribution'] as const).filter((r) => !process.env.REGISTRIES_ONLY || process.env.REGISTRIES_ONLY === r);
  const dir = await mkdtemp(join(tmpdir(), 'berth-attacks-'));
  try {
    const cli = buildBerth();
    const htpasswd = join(dir, 'htpasswd');
    await writeHtpasswd(htpasswd, { [USER.name]: USER.password, [NOBODY.name]: NOBODY.password });
    const image = smallImage();
    const big = randomBytes(BIG_BLOB);
    const bigBlob = `sha256:${createHash('sha256').update(big).digest('hex')}` as Digest;
    const roots: Record<RegistryName, string> = { berth: join(dir, 'berth-root'), distribution: join(dir, 'distribution-root') };
    for (const name of registries) await writeFixtures(roots[name], image, big, bigBlob);
    const rows: Row[] = [];
    for (const attack of attacks) {
      for (const name of registries) {
        process.stderr.write(`attack: ${attack.name} against ${name} (${SECONDS} s)\n`);
        const row = await runOne(attack, { name, root: roots[name], htpasswd, anonymous: false, cli, dir }, { image, bigBlob });
        rows.push(row);
        process.stderr.write(`${table([row]).split('\n')[2]}\n`);
      }
    }
    console.log(`Attacks of issue 18, ${SECONDS} s each, probe every ${PROBE_EVERY_MS} ms (GET /v2/, manifest HEAD; new connection, ${PROBE_TIMEOUT_MS / 1000} s timeout); registries under ulimit -n ${FD_LIMIT}.`);
    console.log(`Distribution: ${distributionVersion()}, schema1 enabled as on berth; for the catalog attack it runs without authentication (no per-repository access with htpasswd).\n`);
    console.log(table(rows));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
