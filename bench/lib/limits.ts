/**
 * Physical limits of this machine, measured in the same run for context: sha256 on one core (node
 * crypto), disk write (1 GiB with fsync) and read (page cache, and O_DIRECT through dd when it
 * can), and loopback TCP (node net, one connection).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { open, rm } from 'node:fs/promises';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MiB } from './stats.js';

const run = promisify(execFile);

export interface Limits {
  sha256: number;
  diskWrite: number;
  diskReadCached: number;
  /** undefined when dd with iflag=direct is not possible here */
  diskReadDirect?: number;
  loopback: number;
  /** bytes used for each measurement */
  bytes: number;
}

const rate = (bytes: number, ms: number) => bytes / MiB / (ms / 1000);

export function sha256Throughput(bytes: number): number {
  const buf = Buffer.alloc(MiB, 7);
  const hash = createHash('sha256');
  const t0 = performance.now();
  for (let done = 0; done < bytes; done += buf.length) hash.update(buf);
  hash.digest();
  return rate(bytes, performance.now() - t0);
}

async function diskWrite(file: string, bytes: number): Promise<number> {
  const buf = Buffer.alloc(4 * MiB, 1);
  const t0 = performance.now();
  const fh = await open(file, 'w');
  try {
    for (let done = 0; done < bytes; done += buf.length) await fh.write(buf, 0, buf.length);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return rate(bytes, performance.now() - t0);
}

async function diskRead(file: string, bytes: number): Promise<number> {
  const buf = Buffer.alloc(4 * MiB);
  const t0 = performance.now();
  const fh = await open(file, 'r');
  try {
    let done = 0;
    while (done < bytes) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
  } finally {
    await fh.close();
  }
  return rate(bytes, performance.now() - t0);
}

/** O_DIRECT bypasses the page cache, which cannot be dropped without root */
async function diskReadDirect(file: string, bytes: number): Promise<number | undefined> {
  try {
    const t0 = performance.now();
    await run('dd', [`if=${file}`, 'of=/dev/null', 'bs=4M', 'iflag=direct'], { timeout: 120_000 });
    return rate(bytes, performance.now() - t0);
  } catch {
    return undefined;
  }
}

async function loopback(bytes: number): Promise<number> {
  const server = createServer((socket) => {
    socket.on('data', () => {});
    socket.on('end', () => socket.end());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const socket = createConnection({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    const buf = Buffer.alloc(MiB, 3);
    const t0 = performance.now();
    for (let done = 0; done < bytes; done += buf.length) {
      if (!socket.write(buf)) await once(socket, 'drain');
    }
    socket.end();
    socket.resume();
    await once(socket, 'close');
    return rate(bytes, performance.now() - t0);
  } finally {
    server.close();
  }
}

export async function measureLimits(dir: string, bytes: number): Promise<Limits> {
  const sha256 = sha256Throughput(Math.min(bytes, 512 * MiB));
  const file = join(dir, 'limits.bin');
  try {
    const diskWriteRate = await diskWrite(file, bytes);
    const diskReadCached = await diskRead(file, bytes);
    const diskReadDirectRate = await diskReadDirect(file, bytes);
    return { sha256, diskWrite: diskWriteRate, diskReadCached, diskReadDirect: diskReadDirectRate, loopback: await loopback(bytes), bytes };
  } finally {
    await rm(file, { force: true });
  }
}
