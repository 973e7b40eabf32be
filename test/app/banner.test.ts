/** The start-up banner and the start-up failures an operator meets first. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../helpers/berth-process.js';

const run = promisify(execFile);

async function logsOfStart(config: Record<string, unknown>, host = '127.0.0.1'): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = await createApp(validateConfig({ version: '0.1', ...config }, 'test'), { logger, configSource: '/etc/berth/config.yml' });
  await app.listen({ host, port: 0 });
  await app.close();
  return lines;
}

describe('start-up banner', () => {
  it('one line with version, URL, config, absolute data path, auth and modes', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-banner-'));
    try {
      const lines = await logsOfStart({ storage: { filesystem: { rootdirectory: root }, delete: { enabled: false } }, http: { secret: 's' } });
      const banners = lines.filter((l) => l.msg === 'berth is listening');
      assert.equal(banners.length, 1);
      const [banner] = banners;
      assert.match(String(banner.version), /^\d+\.\d+\.\d+/);
      assert.match(String(banner.url), /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(banner.config, '/etc/berth/config.yml');
      assert.equal(banner.storage, `filesystem ${resolve(root)}`);
      assert.equal(banner.auth, 'none');
      assert.deepEqual(banner.modes, ['deletes disabled']);
      assert.ok(!lines.some((l) => /Server listening/.test(String(l.msg))), 'no second "listening" line from the web framework');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('warns when deletes are on without authentication on a public interface, and only then', async () => {
    const base = { storage: { inmemory: {}, delete: { enabled: true } }, http: { secret: 's' } };
    const warned = (lines: Record<string, unknown>[]) => lines.some((l) => l.level === 40 && /deletes are enabled without authentication/.test(String(l.msg)));
    assert.equal(warned(await logsOfStart(base, '0.0.0.0')), true);
    assert.equal(warned(await logsOfStart(base, '127.0.0.1')), false, 'loopback only');
    assert.equal(warned(await logsOfStart({ ...base, storage: { inmemory: {}, delete: { enabled: false } } }, '0.0.0.0')), false, 'deletes off');
  });
});

describe('start-up failures are one message naming the key', () => {
  it('a port in use', async () => {
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    const port = (taken.address() as { port: number }).port;
    const dir = await mkdtemp(join(tmpdir(), 'berth-port-'));
    const file = join(dir, 'config.yml');
    await writeFile(file, `version: 0.1\nstorage:\n  inmemory:\nhttp:\n  addr: 127.0.0.1:${port}\n  secret: s\n`);
    try {
      await assert.rejects(run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', file], { cwd: REPO_ROOT, timeout: 30_000 }), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.stderr, new RegExp(`http\\.addr: 127\\.0\\.0\\.1:${port} is already in use`));
        assert.doesNotMatch(err.stderr, /\n\s+at /, 'no stack trace');
        return true;
      });
    } finally {
      taken.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a data directory that cannot be created', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-root-'));
    const blocker = join(dir, 'a-file');
    await writeFile(blocker, '');
    const file = join(dir, 'config.yml');
    await writeFile(file, `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${blocker}/data\nhttp:\n  addr: 127.0.0.1:0\n`);
    try {
      await assert.rejects(run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', file], { cwd: REPO_ROOT, timeout: 30_000 }), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.stderr, /^berth: invalid configuration \(.*config\.yml\):\n  - storage\.filesystem\.rootdirectory: cannot use .*a-file\/data: ENOTDIR/);
        assert.doesNotMatch(err.stderr, /\n\s+at /, 'no stack trace');
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
