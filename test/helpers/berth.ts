/**
 * Starts berth in this process on 127.0.0.1 with a configuration built from `overrides` (merged
 * over a test default: filesystem storage in a fresh temp dir, deletes on, access log off).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { configuredDriver } from '../../src/features/storage.js';
import type { Clock } from '../../src/scheduler/clock.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { sharedCeph } from './ceph.js';

export interface TestRegistry {
  url: string;
  app: App;
  /** the filesystem root (undefined for inmemory) */
  root?: string;
  /** for s3: the storage.s3 parameters (bucket, unique rootdirectory on the shared Ceph store) */
  s3?: Overrides;
  stop(): Promise<void>;
}

export type Overrides = Record<string, unknown>;

export function merge(base: Overrides, overrides: Overrides): Overrides {
  const out: Overrides = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object' && !Array.isArray(current)
        ? merge(current as Overrides, value as Overrides)
        : value;
  }
  return out;
}

/**
 * driver 's3': the shared Ceph store of this test process (test/helpers/ceph.ts; callers stop it
 * with stopSharedCeph() in after()), one bucket, a fresh rootdirectory per registry unless
 * `s3` gives the parameters (a sibling on the same root). 'none': storage comes from `overrides`.
 * `clock`: what the registry's background tasks run on (a ManualClock lets a test advance time).
 * `wrapDriver`: the registry runs on what it returns around the configured driver (e.g. an
 * AgingStore, test/helpers/aging-store.ts, whose clock the test moves).
 */
export async function startBerth(
  overrides: Overrides = {},
  options: {
    driver?: 'filesystem' | 'inmemory' | 's3' | 'none';
    root?: string;
    s3?: Overrides;
    clock?: Clock;
    wrapDriver?: (driver: StorageDriver) => StorageDriver;
  } = {},
): Promise<TestRegistry> {
  const driver = options.driver ?? 'filesystem';
  const root = driver === 'filesystem' ? (options.root ?? (await mkdtemp(join(tmpdir(), 'berth-test-')))) : undefined;
  const ownsRoot = driver === 'filesystem' && options.root === undefined;
  let s3: Overrides | undefined = options.s3;
  if (driver === 's3' && s3 === undefined) {
    const { ceph, bucket } = await sharedCeph();
    s3 = ceph.params(bucket, { rootdirectory: `/t-${randomBytes(6).toString('hex')}` });
  }
  const storageBlock =
    driver === 'filesystem' ? { filesystem: { rootdirectory: root } } : driver === 'inmemory' ? { inmemory: {} } : driver === 's3' ? { s3 } : {};
  const base: Overrides = {
    version: '0.1',
    log: { level: 'error', accesslog: { disabled: true } },
    storage: { ...storageBlock, delete: { enabled: true } },
    http: { addr: '127.0.0.1:0', secret: 'test-secret' },
  };
  const config = validateConfig(merge(base, overrides), 'test');
  const logger = pino({ level: process.env.BERTH_TEST_LOG ?? 'silent' });
  const wrapped = options.wrapDriver?.(await configuredDriver(config, logger));
  const app = await createApp(config, { logger, clock: options.clock, driver: wrapped });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    app,
    root,
    s3,
    async stop() {
      await app.close();
      if (ownsRoot && root) await rm(root, { recursive: true, force: true });
    },
  };
}
