/**
 * `config check` finds what `serve` finds, files named by the configuration included (htpasswd,
 * TLS, token certificates, the CloudFront key), every problem at once; `serve` writes nothing
 * before the configuration is valid; the upload secret file is private; letsencrypt's one error;
 * log.formatter logstash.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { namedFileProblems } from '../../src/config/named-files.js';
import { uploadSecret } from '../../src/http/secret.js';
import { createLogger } from '../../src/log.js';
import { UPLOAD_SECRET } from '../../src/registry/layout.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { issueCert, makeCA, writeHtpasswd } from '../helpers/auth.js';

const run = promisify(execFile);
const cli = ['--import', 'tsx', 'src/cli.ts'];

/** runs the CLI and returns its exit code and output (a failing exit is no throw here) */
async function berth(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...cli, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe('files named by the configuration', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-named-files-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const base = (extra: Record<string, unknown>) => validateConfig({ version: '0.1', storage: { inmemory: {} }, ...extra }, 'test');

  it('an htpasswd path that is a directory (as in Debian\'s /etc/docker/registry/config.yml) or missing', async () => {
    assert.match((await namedFileProblems(base({ auth: { htpasswd: { realm: 'r', path: dir } } })))[0], /htpasswd file .*EISDIR/);
    assert.match((await namedFileProblems(base({ auth: { htpasswd: { realm: 'r', path: join(dir, 'none') } } })))[0], /htpasswd file .*ENOENT/);
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'secret' });
    assert.deepEqual(await namedFileProblems(base({ auth: { htpasswd: { realm: 'r', path: join(dir, 'htpasswd') } } })), []);
  });

  it('TLS: a missing key, and a certificate with the key of another', async () => {
    const ca = await makeCA(dir, 'ca');
    const server = await issueCert(dir, ca, 'server');
    const missing = await namedFileProblems(base({ http: { tls: { certificate: server.cert, key: join(dir, 'none.key') } } }));
    assert.match(missing[0], /cannot read http\.tls\.key .*none\.key/);
    const mismatch = await namedFileProblems(base({ http: { tls: { certificate: server.cert, key: ca.key } } }));
    assert.match(mismatch[0], /http\.tls: the certificate .* cannot serve HTTPS/);
    assert.deepEqual(await namedFileProblems(base({ http: { tls: { certificate: server.cert, key: server.key } } })), []);
  });

  it('every problem at once: token certificates, the CloudFront key, TLS', async () => {
    const config = base({
      auth: { token: { realm: 'https://auth.example.com/token', service: 's', issuer: 'i', rootcertbundle: join(dir, 'no-bundle.pem') } },
      http: { tls: { certificate: join(dir, 'no.crt'), key: join(dir, 'no.key') } },
      middleware: { storage: [{ name: 'cloudfront', options: { baseurl: 'https://d.example.net/', privatekey: join(dir, 'no-cf.pem'), keypairid: 'K' } }] },
    });
    const problems = await namedFileProblems(config);
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0], /auth\.token\.rootcertbundle .*no-bundle\.pem/);
    assert.match(problems[1], /http\.tls\.certificate .*no\.crt/);
    assert.match(problems[2], /^middleware\.storage\.0\.options\.privatekey: cannot read .*no-cf\.pem/);
  });

  it('a filesystem root that cannot be a directory (under a regular file); one that can be made is fine, and is not made', async () => {
    await writeFile(join(dir, 'plain-file'), 'x');
    const fsConfig = (rootdirectory: string) => validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory } } }, 'test');
    const problems = await namedFileProblems(fsConfig(join(dir, 'plain-file', 'registry')));
    assert.equal(problems.length, 1);
    assert.match(problems[0], /^storage\.filesystem\.rootdirectory: cannot use .*plain-file.*not a directory/);
    assert.deepEqual(await namedFileProblems(fsConfig(join(dir, 'new', 'deeper'))), []);
    await assert.rejects(stat(join(dir, 'new')), { code: 'ENOENT' });
  });

  it('`config check` exits 1 with them; `serve` too, before it creates the storage root or the upload secret', async () => {
    const root = join(dir, 'root-never-made');
    const file = join(dir, 'debian-like.yml');
    await writeFile(file, `version: 0.1\nstorage:\n  filesystem: { rootdirectory: ${root} }\nhttp: { addr: 127.0.0.1:0 }\nauth:\n  htpasswd: { realm: basic-realm, path: ${dir} }\n`);
    const check = await berth(['config', 'check', file]);
    assert.equal(check.code, 1);
    assert.match(check.stderr, /htpasswd file .*EISDIR/);
    assert.equal(check.stdout, '', 'no configuration printed');
    const serve = await berth(['serve', file]);
    assert.equal(serve.code, 1);
    assert.match(serve.stderr, /htpasswd file .*EISDIR/);
    await assert.rejects(stat(root), { code: 'ENOENT' });
  });
});

describe('the upload secret file', () => {
  it('is created with mode 0600', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-secret-'));
    try {
      const driver = new FilesystemDriver({ rootdirectory: root });
      const secret = await uploadSecret(undefined, driver, { readOnly: false, logger: { info() {} } });
      assert.ok(secret.length > 0);
      const info = await stat(join(root, UPLOAD_SECRET));
      assert.equal(info.mode & 0o777, 0o600);
      // no temporary file left beside it
      assert.deepEqual(await readdir(join(root, UPLOAD_SECRET, '..')), ['upload-secret']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('other files keep the usual mode', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-secret-'));
    try {
      await mkdir(root, { recursive: true });
      await new FilesystemDriver({ rootdirectory: root }).putContent('/a/b', Buffer.from('x'));
      assert.equal((await stat(join(root, 'a/b'))).mode & 0o077, 0o644 & 0o077 & ~process.umask());
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('http.tls.letsencrypt', () => {
  it('is the one error: unsupported, without errors about the certificate and key it would replace', () => {
    assert.throws(
      () => validateConfig({ version: '0.1', storage: { inmemory: {} }, http: { tls: { letsencrypt: { cachefile: '/x', email: 'a@b.c' } } } }, 'test'),
      (err: ConfigError) => {
        assert.equal(err.problems.length, 1, err.problems.join('\n'));
        assert.match(err.problems[0], /^http\.tls\.letsencrypt: Let's Encrypt .* is not implemented/);
        return true;
      },
    );
  });

  it('without it, a missing certificate or key is still an error naming the key', () => {
    assert.throws(
      () => validateConfig({ version: '0.1', storage: { inmemory: {} }, http: { tls: { key: '/k' } } }, 'test'),
      (err: ConfigError) => err.problems.length === 1 && /^http\.tls\.certificate: required/.test(err.problems[0]),
    );
  });
});

describe('log.formatter: logstash', () => {
  it('is accepted, and writes JSON lines with logstash\'s names as Distribution does (@timestamp, @version, message)', () => {
    const config = validateConfig({ version: '0.1', storage: { inmemory: {} }, log: { formatter: 'logstash', fields: { service: 'registry' } } }, 'test');
    const lines: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    createLogger(config.log, out).warn({ repo: 'a/b' }, 'slow');
    const entry = JSON.parse(lines.join('')) as Record<string, unknown>;
    assert.equal(entry.message, 'slow');
    assert.equal(entry['@version'], '1');
    assert.match(String(entry['@timestamp']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(entry.level, 'warn');
    assert.equal(entry.service, 'registry');
    assert.equal(entry.repo, 'a/b');
    assert.equal(entry.msg, undefined);
    assert.equal(entry.time, undefined);
  });
});
