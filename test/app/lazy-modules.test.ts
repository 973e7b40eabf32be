/**
 * Modules that only some configurations use are loaded only when configured (src/app.ts): a
 * registry on the filesystem does not carry the AWS SDK, ioredis or prom-client in its memory, nor,
 * without authentication, the credential checkers' jose, bcryptjs and openid-client (auth/index.ts).
 * Checked on `berth serve` in a child process, by the modules its loader resolved.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import bcrypt from 'bcryptjs';
import { startBerthProcess } from '../helpers/berth-process.js';
import { freePort } from '../helpers/ports.js';
import type { Overrides } from '../helpers/berth.js';

/** what a configuration without S3, cloudfront, redis and http.debug must not load */
const OPTIONAL = {
  's3 driver': '/src/storage/s3/driver.ts',
  '@aws-sdk/client-s3': '/node_modules/@aws-sdk/client-s3/',
  '@aws-sdk/s3-request-presigner': '/node_modules/@aws-sdk/s3-request-presigner/',
  'cloudfront middleware': '/src/storage/middleware/cloudfront.ts',
  '@aws-sdk/cloudfront-signer': '/node_modules/@aws-sdk/cloudfront-signer/',
  'redis rate limiter': '/src/auth/ratelimit-redis.ts',
  'redis metadata cache': '/src/registry/cache/redis-cache.ts',
  'redis client': '/src/redis-client.ts',
  ioredis: '/node_modules/ioredis/',
  'debug listener': '/src/debug/server.ts',
  'prometheus metrics': '/src/debug/prometheus.ts',
  'prom-client': '/node_modules/prom-client/',
  // the token issuer's and verifier's (jose's decodeJwt, which the edge reads a token's subject with, is its own module)
  'jose (signing and verifying)': '/node_modules/jose/dist/webapi/jwt/verify.js',
  'bcryptjs (htpasswd)': '/node_modules/bcryptjs/',
  'openid-client (auth.oidc)': '/node_modules/openid-client/',
};

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** starts `berth serve` with `config`, answers GET /v2/, and returns the URLs its loader resolved (and its children's: `<pid> <url>` a line) */
async function modulesLoadedBy(config: Overrides, readyStatus = 200): Promise<string[]> {
  return (await importsOf(config, readyStatus)).lines;
}

async function importsOf(config: Overrides, readyStatus = 200): Promise<{ lines: string[]; pid: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-imports-'));
  dirs.push(dir);
  const log = join(dir, 'imports.log');
  const recorder = pathToFileURL(join(import.meta.dirname, '..', 'helpers', 'import-recorder.mjs')).href;
  const berth = await startBerthProcess({ config, readyStatus, env: { BERTH_IMPORT_LOG: log, NODE_OPTIONS: `--import ${recorder}` } });
  try {
    assert.equal((await fetch(`${berth.url}/v2/`)).status, readyStatus);
  } finally {
    await berth.stop();
  }
  return { lines: (await readFile(log, 'utf8')).split('\n').filter((line) => line !== ''), pid: berth.pid };
}

const loaded = (urls: string[], path: string) => urls.some((url) => url.includes(path));

describe('modules loaded by configuration', () => {
  it('serving does not load yaml, zod or the configuration schema: a short-lived child process validates the configuration', async () => {
    const { lines, pid } = await importsOf({});
    const own = lines.filter((line) => line.startsWith(`${pid} `));
    const children = lines.filter((line) => !line.startsWith(`${pid} `));
    assert.ok(loaded(own, '/src/app.ts'), `recorded:\n${lines.join('\n')}`);
    for (const path of ['/node_modules/zod/', '/node_modules/yaml/', '/src/config/schema.ts']) {
      assert.ok(!loaded(own, path), `the serving process loaded ${path}`);
      assert.ok(loaded(children, path), `the configuration's child process did not load ${path}`);
    }
  });

  it('serving from the filesystem without authentication loads neither the AWS SDK nor ioredis nor prom-client, nor jose, bcryptjs or openid-client', async () => {
    const urls = await modulesLoadedBy({});
    // the recorder saw the application
    assert.ok(loaded(urls, '/src/app.ts') && loaded(urls, '/node_modules/fastify/'), `recorded:\n${urls.join('\n')}`);
    const unexpected = Object.entries(OPTIONAL).filter(([, path]) => loaded(urls, path));
    assert.deepEqual(unexpected.map(([name]) => name), []);
  });

  it('loads bcryptjs with auth.htpasswd', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-htpasswd-'));
    dirs.push(dir);
    const path = join(dir, 'htpasswd');
    await writeFile(path, `alice:${await bcrypt.hash('secret', 4)}\n`);
    // GET /v2/ asks for credentials
    const urls = await modulesLoadedBy({ auth: { htpasswd: { realm: 'berth', path } } }, 401);
    assert.ok(loaded(urls, OPTIONAL['bcryptjs (htpasswd)']), `recorded:\n${urls.join('\n')}`);
    assert.ok(!loaded(urls, OPTIONAL['openid-client (auth.oidc)']));
  });

  it('loads the redis rate limiter and the debug listener with its metrics when configured', async () => {
    // nothing listens on the redis port: the limiter logs a warning and lets requests through
    const urls = await modulesLoadedBy({
      http: { debug: { addr: '127.0.0.1:0', prometheus: { enabled: true, path: '/metrics' } } },
      ratelimit: { rate: 100, burst: 100 },
      redis: { addr: `127.0.0.1:${await freePort()}`, dialtimeout: '200ms' },
    });
    for (const name of ['redis rate limiter', 'ioredis', 'debug listener', 'prometheus metrics', 'prom-client'] as const) {
      assert.ok(loaded(urls, OPTIONAL[name]), `${name} not loaded`);
    }
    assert.ok(!loaded(urls, OPTIONAL['@aws-sdk/client-s3']));
    assert.ok(!loaded(urls, OPTIONAL['redis metadata cache']), 'the shared metadata cache only with storage.cache.blobdescriptor: redis');
  });

  it('loads the shared metadata cache (and not the rate limiter) with storage.cache.blobdescriptor: redis', async () => {
    const urls = await modulesLoadedBy({
      storage: { cache: { blobdescriptor: 'redis' } },
      redis: { addr: `127.0.0.1:${await freePort()}`, dialtimeout: '200ms' },
    });
    for (const name of ['redis metadata cache', 'redis client', 'ioredis'] as const) assert.ok(loaded(urls, OPTIONAL[name]), `${name} not loaded`);
    assert.ok(!loaded(urls, OPTIONAL['redis rate limiter']));
  });
});
