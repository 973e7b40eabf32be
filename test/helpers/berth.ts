/**
 * Starts berth in this process on 127.0.0.1 with a configuration built from `overrides` (merged
 * over a test default: filesystem storage in a fresh temp dir, deletes on, access log off).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';

export interface TestRegistry {
  url: string;
  app: App;
  /** the filesystem root (undefined for inmemory) */
  root?: string;
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

export async function startBerth(overrides: Overrides = {}, options: { driver?: 'filesystem' | 'inmemory'; root?: string } = {}): Promise<TestRegistry> {
  const driver = options.driver ?? 'filesystem';
  const root = driver === 'filesystem' ? (options.root ?? (await mkdtemp(join(tmpdir(), 'berth-test-')))) : undefined;
  const ownsRoot = driver === 'filesystem' && options.root === undefined;
  const base: Overrides = {
    version: '0.1',
    log: { level: 'error', accesslog: { disabled: true } },
    storage: { ...(driver === 'filesystem' ? { filesystem: { rootdirectory: root } } : { inmemory: {} }), delete: { enabled: true } },
    http: { addr: '127.0.0.1:0', secret: 'test-secret' },
  };
  const config = validateConfig(merge(base, overrides), 'test');
  const logger = pino({ level: process.env.BERTH_TEST_LOG ?? 'silent' });
  const app = createApp(config, { logger });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    app,
    root,
    async stop() {
      await app.close();
      if (ownsRoot && root) await rm(root, { recursive: true, force: true });
    },
  };
}
