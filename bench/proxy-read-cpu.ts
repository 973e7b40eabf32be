/**
 * Where a cold pull-through pull's CPU goes, step by step, without the registries: this process
 * reads 1 GiB from a local HTTP server (a child process, not measured) and adds one step at a
 * time; each line is this process's CPU seconds (process.cpuUsage, not wall time: the figures hold
 * on a loaded machine). The steps are those of src/proxy/blob-fetch.ts; the socket write to the
 * client is not among them (docs/performance.md, "Pull-through cache: cold pulls").
 *
 *   npx tsx bench/proxy-read-cpu.ts [write batch bytes, default 1048576]
 *   OWN_ONLY=1 npx tsx bench/proxy-read-cpu.ts   (only the cache's own connection against undici, alternating)
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { threadHash } from '../src/crypto/hash-thread.js';
import { getBlob, type BlobBody } from '../src/proxy/blob-get.js';

/** this process's main thread's CPU seconds (/proc: the hashing thread is not in it) */
function mainThreadCpu(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const SIZE = 1024 * 1024 * 1024;

if (process.argv[2] === 'serve') {
  const block = Buffer.alloc(1 << 20, 7);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': SIZE });
    let left = SIZE;
    const more = (): void => {
      while (left > 0) {
        left -= block.length;
        if (!res.write(block)) {
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    more();
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
} else {
  const batchBytes = Number(process.argv[2] ?? 1 << 20);
  const child = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: process.execArgv });
  const port = await new Promise<number>((resolve) => child.once('message', (p) => resolve(p as number)));
  const url = `http://127.0.0.1:${port}/`;
  const file = join(tmpdir(), `berth-proxy-read-cpu-${process.pid}`);

  /** the cache's own connection (src/proxy/blob-get.ts): its batches, each given back once written and hashed */
  const current: { own?: BlobBody } = {};
  const step = async (label: string, read: () => Promise<AsyncIterable<Uint8Array>>, hash: boolean | 'thread', write: boolean) => {
    const t0 = process.cpuUsage();
    const m0 = mainThreadCpu();
    const fh = write ? await open(file, 'w') : undefined;
    const h = hash === true ? createHash('sha256') : undefined;
    const th = hash === 'thread' ? threadHash('sha256') : undefined;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let batch: Buffer[] = [];
    let bytes = 0;
    let held: Buffer[] = [];
    current.own = undefined;
    for await (const c of await read()) {
      const chunk = Buffer.from(c.buffer, c.byteOffset, c.byteLength);
      h?.update(chunk);
      if (th) {
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= batchBytes) {
          await th.update(pending);
          pending = [];
          pendingBytes = 0;
        }
      }
      if (fh) {
        batch.push(chunk);
        bytes += chunk.length;
        if (bytes >= batchBytes) {
          await fh.writev(batch);
          batch = [];
          bytes = 0;
        }
      }
      const own = current.own as BlobBody | undefined; // set by read() (TypeScript cannot see it)
      if (own) {
        held.push(chunk);
        if (batch.length === 0 && pending.length === 0) {
          for (const b of held) own.release(b);
          held = [];
        }
      }
    }
    if (fh && batch.length > 0) await fh.writev(batch);
    await fh?.close();
    if (th) {
      await th.update(pending);
      await th.digest();
    }
    const u = process.cpuUsage(t0);
    console.log(`${label.padEnd(38)} ${((u.user + u.system) / 1e6).toFixed(2)} CPU s (user ${(u.user / 1e6).toFixed(2)}, system ${(u.system / 1e6).toFixed(2)}), main thread ${(mainThreadCpu() - m0).toFixed(2)}`);
  };
  const withFetch = async () => (await fetch(url)).body as unknown as AsyncIterable<Uint8Array>;
  const withUndici = async () => (await request(url)).body as AsyncIterable<Uint8Array>;
  const withOwn = async () => {
    current.own = (await getBlob(new URL(url), {}, new AbortController().signal)).body!;
    return current.own.batches();
  };
  try {
    if (process.env.OWN_ONLY !== '1') {
    await step('fetch, read only', withFetch, false, false);
    await step('undici request, read only', withUndici, false, false);
    await step('undici + sha256', withUndici, true, false);
    await step(`undici + writev ${batchBytes >> 10} KiB`, withUndici, false, true);
    await step(`undici + sha256 + writev ${batchBytes >> 10} KiB`, withUndici, true, true);
    await step('undici + sha256 on the hashing thread', withUndici, 'thread', false);
    await step(`undici + thread sha256 + writev ${batchBytes >> 10} KiB`, withUndici, 'thread', true);
    }
    await step('own connection, read only', withOwn, false, false);
    await step(`own + thread sha256 + write ${batchBytes >> 10} KiB`, withOwn, 'thread', true);
    await step(`undici + thread sha256 + writev ${batchBytes >> 10} KiB`, withUndici, 'thread', true);
    await step(`own + thread sha256 + write ${batchBytes >> 10} KiB`, withOwn, 'thread', true);
  } finally {
    await rm(file, { force: true });
    child.kill();
  }
}
