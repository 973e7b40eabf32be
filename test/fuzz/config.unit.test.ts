/**
 * Property tests (issue 18) of the configuration loader (src/config/load.ts): a YAML file, then
 * REGISTRY_* environment overrides, then the schema. Whatever the file and the variables hold, the
 * outcome is a configuration or a ConfigError listing problems with their key paths: never
 * another exception. Overrides of known keys round-trip into the configuration.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { ConfigError, loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { params } from './fuzz.js';

/** keys of the configuration, so that generated trees and variables reach deep into the schema */
const KEYS = [
  'version', 'log', 'level', 'formatter', 'accesslog', 'disabled', 'storage', 'filesystem', 'rootdirectory', 'inmemory', 's3', 'delete', 'enabled',
  'maintenance', 'uploadpurging', 'age', 'interval', 'dryrun', 'readonly', 'redirect', 'disable', 'http', 'addr', 'host', 'prefix', 'secret', 'tls',
  'certificate', 'key', 'headers', 'auth', 'htpasswd', 'realm', 'path', 'token', 'access', 'catalog', 'maxentries', 'notifications', 'endpoints', 'url',
  'ratelimit', 'rate', 'burst', 'by', 'compatibility', 'schema1', 'proxy', 'remoteurl', 'redis', 'health', 'cache', 'validation', '__proto__', 'constructor',
];
const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) });
const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom('1h30m', '-5s', '0', '127.0.0.1:5000', 'sha256', '~', '.inf'));
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('tree'), { maxLength: 3 }), fc.dictionary(key, tie('tree'), { maxKeys: 5 })),
}));
const BASE = { version: '0.1', storage: { inmemory: {} }, http: { addr: '127.0.0.1:5000' } };

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-fuzz-config-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

let files = 0;
/** loads `text` as a configuration file under `env`: a configuration, or the ConfigError it was refused with */
async function load(text: string, env: NodeJS.ProcessEnv): Promise<LoadedConfig | ConfigError> {
  const file = join(dir, `config-${files++}.yml`);
  await writeFile(file, text);
  try {
    return await loadConfig(file, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) assert.fail(`expected a ConfigError, got ${(err as Error)?.stack ?? err}`);
    assert.ok(err.problems.length > 0 && err.problems.every((p) => p.trim() !== ''), 'a ConfigError lists its problems');
    return err;
  } finally {
    await rm(file, { force: true });
  }
}

test('config files: any YAML tree loads or is a ConfigError naming its problems', async () => {
  const document = fc.oneof(
    tree.map((t) => stringify(t)),
    fc.dictionary(key, tree, { maxKeys: 4 }).map((extra) => stringify({ ...BASE, ...extra })),
    fc.tuple(fc.constantFrom(...KEYS.slice(0, 48)), tree).map(([k, v]) => stringify({ ...BASE, http: { ...BASE.http, [k]: v } })),
  );
  await fc.assert(
    fc.asyncProperty(document, async (text) => {
      await load(text, {});
    }),
    params(250),
  );
});

test('config files: text that is not YAML is a ConfigError', async () => {
  const noise = fc.string({ unit: fc.constantFrom(...'{}[]:-"\'&*!|>%@`#\t\n ', 'version', 'storage', '0.1'), maxLength: 60 });
  await fc.assert(
    fc.asyncProperty(fc.oneof(noise, fc.string({ unit: 'binary', maxLength: 60 })), async (text) => {
      await load(text, {});
    }),
    params(200),
  );
});

test('environment overrides: any REGISTRY_* variables give a configuration or a ConfigError', async () => {
  const name = fc.array(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...KEYS.slice(0, 52)) }, { weight: 1, arbitrary: fc.constantFrom('', '0', 'x', 'proto') }), { minLength: 1, maxLength: 4 }).map((parts) => `REGISTRY_${parts.join('_').toUpperCase()}`);
  const value = fc.oneof(
    fc.string({ maxLength: 15 }),
    fc.constantFrom('[', '{', '[a, b', '{x: [', '["a","b"]', '{"a": 1}', '[1, {]', 'inmemory', 'filesystem', 's3', 'true', '0', '-1', '1h'),
    tree.map((t) => JSON.stringify(t) ?? ''),
  );
  await fc.assert(
    fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 4 }), async (env) => {
      await load(stringify(BASE), env);
    }),
    params(300),
  );
});

test('environment overrides: a known key set by a variable is what the configuration holds', async () => {
  const port = fc.integer({ min: 1, max: 65535 });
  const level = fc.constantFrom('error', 'warn', 'info', 'debug');
  const entries = fc.integer({ min: 1, max: 10000 });
  await fc.assert(
    fc.asyncProperty(port, level, entries, async (p, l, n) => {
      const loaded = await load(stringify(BASE), { REGISTRY_HTTP_ADDR: `127.0.0.1:${p}`, REGISTRY_LOG_LEVEL: l, REGISTRY_CATALOG_MAXENTRIES: String(n) });
      assert.ok(!(loaded instanceof ConfigError), loaded instanceof ConfigError ? loaded.message : '');
      assert.equal(loaded.config.http.addr, `127.0.0.1:${p}`);
      assert.equal(loaded.config.log.level, l);
      assert.equal(loaded.config.catalog.maxentries, n);
    }),
    params(100),
  );
});
