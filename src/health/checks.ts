/**
 * The health checks Distribution's `health:` block configures, each a function that resolves when
 * healthy and throws a message saying what failed. The monitor (monitor.ts) polls them.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { connect } from 'node:net';
import { PathNotFoundError, type StorageDriver } from '../storage/driver.js';

export type Check = () => Promise<void>;

/**
 * The store answers: the driver's own readiness probe where it has one (S3: HeadBucket, so a
 * frozen or unreachable store fails), and a stat of the root (a missing root is an empty registry).
 */
export function storageCheck(driver: StorageDriver, timeoutMs: number): Check {
  // ready() where the driver has its own probe (S3: HeadBucket), then a stat that every driver
  // answers: a wrapped driver (metrics, call deadlines) always has a ready() that may do nothing
  const probe = async () => {
    await driver.ready?.();
    await driver.stat('/').catch((err) => {
      if (!(err instanceof PathNotFoundError)) throw err;
    });
  };
  return () => withTimeout(probe(), timeoutMs, `storage driver ${driver.name}`);
}

/** fails while the file exists: an operator takes the registry out of rotation by creating it */
export function fileCheck(file: string): Check {
  const path = resolve(file);
  return async () => {
    try {
      await stat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    throw new Error(`${path}: file exists`);
  };
}

/** a HEAD of `uri` answers `statuscode` within the timeout */
export function httpCheck(options: { uri: string; headers: Record<string, string[]>; statuscode: number; timeout: number }): Check {
  return async () => {
    const headers = new Headers();
    for (const [name, values] of Object.entries(options.headers)) for (const value of values) headers.append(name, value);
    let response: Response;
    try {
      response = await fetch(options.uri, { method: 'HEAD', headers, signal: AbortSignal.timeout(options.timeout), redirect: 'manual' });
    } catch (err) {
      throw new Error(`${options.uri}: ${describe(err)}`);
    }
    if (response.status !== options.statuscode) {
      throw new Error(`${options.uri}: answered ${response.status}, expected ${options.statuscode}`);
    }
  };
}

/** a TCP connection to `addr` (host:port) opens within the timeout */
export function tcpCheck(options: { addr: string; timeout: number }): Check {
  const at = options.addr.lastIndexOf(':');
  const host = options.addr.slice(0, at).replace(/^\[|\]$/g, '') || '127.0.0.1';
  const port = Number(options.addr.slice(at + 1));
  return () =>
    new Promise<void>((done, fail) => {
      const socket = connect({ host, port, timeout: options.timeout });
      socket.once('connect', () => {
        socket.destroy();
        done();
      });
      socket.once('timeout', () => {
        socket.destroy();
        fail(new Error(`${options.addr}: no connection within ${options.timeout}ms`));
      });
      socket.once('error', (err) => fail(new Error(`${options.addr}: connection failed: ${err.message}`)));
    });
}

async function withTimeout(work: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms}ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { message?: string } }).cause?.message;
  if ((err as Error).name === 'TimeoutError') return 'no answer within the timeout';
  return cause ?? (err as Error).message ?? String(err);
}
