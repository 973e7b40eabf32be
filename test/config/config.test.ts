import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { configProblems } from '../helpers/config.js';
import { ConfigError, loadConfig, maskSecrets, validateConfig } from '../../src/config/load.js';
import { parseDuration } from '../../src/config/duration.js';

const run = promisify(execFile);

async function configFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'berth-config-'));
  const file = join(dir, 'config.yml');
  await writeFile(file, text);
  return file;
}

const problems = configProblems;

describe('configuration', () => {
  it('has a built-in default: filesystem under ./data, :5000 on every interface, deletes enabled', async () => {
    const { config } = await loadConfig(undefined, {});
    assert.equal(config.storage.filesystem?.rootdirectory, './data');
    assert.equal(config.http.addr, '0.0.0.0:5000');
    assert.equal(config.storage.delete.enabled, true);
    assert.equal(config.storage.maintenance.uploadpurging.age, 168 * 3600 * 1000);
  });

  it('reads a Distribution-style YAML file with its defaults', async () => {
    const file = await configFile(`
version: 0.1
log:
  level: debug
  formatter: text
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  maintenance:
    uploadpurging:
      enabled: true
      age: 1h30m
      interval: 500ms
      dryrun: true
    readonly:
      enabled: true
  redirect:
    disable: true
http:
  addr: 127.0.0.1:5001
  host: https://registry.example.com
  prefix: /reg/
  secret: s3cr3t
  relativeurls: true
  headers:
    X-Content-Type-Options: [nosniff]
`);
    const { config } = await loadConfig(file, {});
    assert.equal(config.log.level, 'debug');
    assert.equal(config.log.formatter, 'text');
    assert.equal(config.log.accesslog.disabled, true);
    assert.equal(config.storage.delete.enabled, false, 'deletes are off unless enabled, as in Distribution');
    assert.equal(config.storage.maintenance.uploadpurging.age, 90 * 60 * 1000);
    assert.equal(config.storage.maintenance.uploadpurging.interval, 500);
    assert.equal(config.storage.maintenance.uploadpurging.dryrun, true);
    assert.equal(config.storage.maintenance.readonly.enabled, true);
    assert.equal(config.storage.redirect.disable, true);
    assert.equal(config.http.prefix, '/reg/');
    assert.deepEqual(config.http.headers, { 'X-Content-Type-Options': ['nosniff'] });
  });

  it('applies REGISTRY_* environment overrides, typed by the schema', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /a\n');
    const { config } = await loadConfig(file, {
      REGISTRY_HTTP_ADDR: '127.0.0.1:6001',
      REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY: '/b',
      REGISTRY_STORAGE_DELETE_ENABLED: 'true',
      REGISTRY_STORAGE_MAINTENANCE_UPLOADPURGING_AGE: '2h',
      REGISTRY_HTTP_HEADERS: '{"X-A": ["1"]}',
      REGISTRY_HTTP_SECRET: '12345',
    });
    assert.equal(config.http.addr, '127.0.0.1:6001');
    assert.equal(config.storage.filesystem?.rootdirectory, '/b');
    assert.equal(config.storage.delete.enabled, true);
    assert.equal(config.storage.maintenance.uploadpurging.age, 2 * 3600 * 1000);
    assert.deepEqual(config.http.headers, { 'X-A': ['1'] });
    assert.equal(config.http.secret, '12345');
  });

  it('REGISTRY_STORAGE chooses the driver; REGISTRY_CONFIGURATION_PATH names the file', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /a\n');
    const { config, source } = await loadConfig(undefined, { REGISTRY_CONFIGURATION_PATH: file, REGISTRY_STORAGE: 'inmemory' });
    assert.equal(source, file);
    assert.deepEqual(config.storage.inmemory, {});
    assert.equal(config.storage.filesystem, undefined);
  });

  it('ignores a REGISTRY_* variable that names no key, with a warning naming it (Kubernetes injects REGISTRY_PORT)', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /a\n');
    const { config, warnings } = await loadConfig(file, {
      REGISTRY_PORT: 'tcp://10.0.0.7:5000',
      REGISTRY_SERVICE_HOST: '10.0.0.7',
      REGISTRY_HTTP_BOGUS: 'x',
      REGISTRY_HTTP_ADDR: '127.0.0.1:6001',
    });
    assert.equal(config.http.addr, '127.0.0.1:6001');
    assert.deepEqual(warnings.sort(), [
      'environment variable REGISTRY_HTTP_BOGUS names no configuration key (http.bogus); ignored',
      'environment variable REGISTRY_PORT names no configuration key (port); ignored',
      'environment variable REGISTRY_SERVICE_HOST names no configuration key (service.host); ignored',
    ]);
  });

  it('a REGISTRY_* variable with a bad value is an error that names the variable', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /a\n');
    await assert.rejects(loadConfig(file, { REGISTRY_STORAGE_DELETE_ENABLED: 'maybe' }), (err: ConfigError) => {
      assert.match(err.message, /storage\.delete\.enabled: expected a boolean .* \(from the environment variable REGISTRY_STORAGE_DELETE_ENABLED\)/);
      return true;
    });
  });

  it('a REGISTRY_* list or map that is not YAML is a ConfigError naming the variable (found by test/fuzz)', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\n');
    await assert.rejects(loadConfig(file, { REGISTRY_HTTP_HEADERS: '{X-Frame: [' }), (err: ConfigError) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /environment variable REGISTRY_HTTP_HEADERS/);
      assert.match(err.message, /http\.headers: the value starts as a list or map but is not valid YAML or JSON/);
      return true;
    });
  });

  it('warns about a redis block that nothing uses (no ratelimit, no shared metadata cache)', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\nredis:\n  addr: 127.0.0.1:6379\n');
    assert.deepEqual((await loadConfig(file, {})).warnings, [
      'redis: configured but unused: berth uses Redis to share ratelimit buckets and, with storage.cache.blobdescriptor: redis, the metadata cache between instances (set one, or remove the block)',
    ]);
    const used = await configFile('version: 0.1\nstorage:\n  inmemory:\nredis:\n  addr: 127.0.0.1:6379\nratelimit:\n  rate: 5\n  burst: 10\n');
    assert.deepEqual((await loadConfig(used, {})).warnings, []);
    const cache = await configFile('version: 0.1\nstorage:\n  inmemory:\n  cache:\n    blobdescriptor: redis\nredis:\n  addr: 127.0.0.1:6379\n');
    assert.deepEqual((await loadConfig(cache, {})).warnings, []);
  });

  it('storage.cache: redis needs the redis block; blobdescriptorsize is a count of entries', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\n  cache:\n    blobdescriptor: redis\n');
    await assert.rejects(loadConfig(file, {}), /storage\.cache\.blobdescriptor: redis shares the metadata cache through the Redis server of the redis block: set redis\.addr, or use inmemory/);
    const sized = await configFile('version: 0.1\nstorage:\n  inmemory:\n  cache:\n    blobdescriptor: inmemory\n    blobdescriptorsize: 500\n');
    assert.deepEqual((await loadConfig(sized, {})).config.storage.cache, { blobdescriptor: 'inmemory', blobdescriptorsize: 500 });
    await assert.rejects(loadConfig(await configFile('version: 0.1\nstorage:\n  inmemory:\n  cache:\n    blobdescriptorsize: -1\n'), {}), /storage\.cache\.blobdescriptorsize/);
  });

  it("accepts Distribution's keys that change nothing here, with one warning each, and its v3 redis shape", async () => {
    const file = await configFile(`version: 0.1
loglevel: debug
log:
  formatter: json
  hooks:
    - type: mail
      disabled: true
  reportcaller: false
reporting:
  newrelic:
    licensekey: x
storage:
  inmemory:
  cache:
    blobdescriptor: redis
  tag:
    concurrencylimit: 8
http:
  addr: :5000
  net: tcp
  http2:
    disabled: false
  h2c:
    enabled: true
redis:
  addrs: [127.0.0.1:6379]
  clientname: berth
  poolsize: 64
  maxidleconns: 16
  connmaxidletime: 300s
  dialtimeout: 10ms
ratelimit:
  rate: 5
  burst: 10
`);
    const { config, warnings } = await loadConfig(file, {});
    assert.equal(config.log.level, 'debug', 'the deprecated loglevel applies when log.level is unset');
    assert.equal(config.redis?.addr, '127.0.0.1:6379');
    assert.equal(config.redis?.dialtimeout, 10);
    assert.equal(config.storage.cache?.blobdescriptor, 'redis', 'the metadata cache shared through Redis');
    for (const key of ['log.hooks', 'log.reportcaller', 'reporting', 'storage.tag.concurrencylimit', 'http.http2', 'http.h2c']) {
      assert.equal(warnings.filter((w) => w.startsWith(`${key}: accepted for compatibility and ignored (`)).length, 1, key);
    }
    assert.ok(warnings.includes('loglevel: deprecated (as in Distribution); use log.level'));
    assert.ok(warnings.some((w) => /^redis: poolsize, maxidleconns, connmaxidletime: accepted for compatibility and ignored/.test(w)), warnings.join('\n'));
  });

  it('refuses in plain words what would lose meaning: a unix socket, several Redis servers, Sentinel', async () => {
    const base = 'version: 0.1\nstorage:\n  inmemory:\n';
    await assert.rejects(loadConfig(await configFile(`${base}http:\n  net: unix\n  addr: /run/berth.sock\n`), {}), /http\.net: only "tcp" is supported/);
    await assert.rejects(loadConfig(await configFile(`${base}redis:\n  addrs: [a:1, b:2]\n`), {}), /redis: one Redis server only/);
    await assert.rejects(loadConfig(await configFile(`${base}redis:\n  addrs: [a:1]\n  mastername: m\n`), {}), /redis\.mastername: Redis Sentinel \(redis\.mastername\) is not implemented/);
    await assert.rejects(loadConfig(await configFile(`${base}redis:\n  db: 1\n`), {}), /set redis\.addr/);
  });

  it("reads booleans as Go's strconv.ParseBool does", async () => {
    for (const [text, value] of [['1', true], ['t', true], ['True', true], ['TRUE', true], ['0', false], ['F', false], ['False', false]] as const) {
      const { config } = await loadConfig(undefined, { REGISTRY_STORAGE_DELETE_ENABLED: text });
      assert.equal(config.storage.delete.enabled, value, text);
    }
    const file = await configFile('version: 0.1\nstorage:\n  inmemory: {}\n  delete:\n    enabled: True\n');
    assert.equal((await loadConfig(file, {})).config.storage.delete.enabled, true);
    await assert.rejects(loadConfig(undefined, { REGISTRY_STORAGE_DELETE_ENABLED: 'yes' }), /expected a boolean/);
  });

  it('names the full key path and what is allowed for every error', () => {
    const found = problems(() =>
      validateConfig(
        {
          version: '0.1',
          log: { level: 'loud' },
          storage: { filesystem: { rootdirectory: '/x' }, delete: { enabled: 'maybe' }, maintenance: { uploadpurging: { age: '7 days' } } },
          http: { addr: 'localhost', prefix: 'noslash', host: 'not a url' },
          bogus: 1,
        },
        'test',
      ),
    );
    const text = found.join('\n');
    assert.match(text, /^log\.level: .*"error"\|"warn"\|"info"\|"debug"/m);
    assert.match(text, /^storage\.delete\.enabled: /m);
    assert.match(text, /^storage\.maintenance\.uploadpurging\.age: expected a duration such as "500ms"/m);
    assert.match(text, /^http\.addr: expected host:port/m);
    assert.match(text, /^http\.prefix: expected a path that starts and ends with "\/"/m);
    assert.match(text, /^http\.host: expected an absolute URL/m);
    assert.match(text, /^bogus: unknown key/m);
  });

  it('reads notification endpoints with the documented defaults', () => {
    const config = validateConfig(
      {
        version: '0.1',
        storage: { inmemory: {} },
        notifications: {
          events: { includereferences: true },
          endpoints: [
            { name: 'a', url: 'http://127.0.0.1:9/hook' },
            { name: 'b', url: 'https://example.com/x', headers: { Authorization: ['Bearer t'] }, timeout: '500ms', threshold: '3', backoff: '2s', queuelimit: 10, ignore: { actions: ['pull'], mediatypes: ['application/octet-stream'] }, ignoredmediatypes: ['x/y'], disabled: 'true' },
          ],
        },
      },
      't',
    );
    assert.equal(config.notifications.events.includereferences, true);
    const [a, b] = config.notifications.endpoints;
    assert.deepEqual({ timeout: a.timeout, threshold: a.threshold, backoff: a.backoff, disabled: a.disabled, headers: a.headers, queuelimit: a.queuelimit }, { timeout: 1000, threshold: 10, backoff: 1000, disabled: false, headers: {}, queuelimit: undefined });
    assert.deepEqual({ timeout: b.timeout, threshold: b.threshold, backoff: b.backoff, disabled: b.disabled, queuelimit: b.queuelimit }, { timeout: 500, threshold: 3, backoff: 2000, disabled: true, queuelimit: 10 });
    assert.deepEqual(b.ignore, { actions: ['pull'], mediatypes: ['application/octet-stream'] });
    const masked = maskSecrets(config) as typeof config;
    assert.deepEqual(masked.notifications.endpoints[1].headers, { Authorization: ['********'] }, 'endpoint header values are masked in config check');
    const none = validateConfig({ version: '0.1', storage: { inmemory: {} } }, 't');
    assert.deepEqual(none.notifications, { events: { includereferences: false }, endpoints: [] });
    assert.equal(none.http.draintimeout, 10_000);
    assert.equal(none.http.debug, undefined);
  });

  it('refuses bad notification endpoints with the key path', () => {
    const text = problems(() =>
      validateConfig(
        {
          version: '0.1',
          storage: { inmemory: {} },
          notifications: { endpoints: [{ name: 'a', url: 'ftp://x', timeout: 'soon', threshold: -1, ignore: { actions: ['copy'] } }, { name: 'a', url: 'http://x' }, { url: 'http://y', bogus: 1 }] },
        },
        't',
      ),
    ).join('\n');
    assert.match(text, /^notifications\.endpoints\.0\.url: expected an http:\/\/ or https:\/\/ URL/m);
    assert.match(text, /^notifications\.endpoints\.0\.timeout: expected a duration/m);
    assert.match(text, /^notifications\.endpoints\.0\.threshold: /m);
    assert.match(text, /^notifications\.endpoints\.0\.ignore\.actions\.0: /m);
    assert.match(text, /^notifications\.endpoints\.2\.name: /m);
    assert.match(text, /^notifications\.endpoints\.2\.bogus: unknown key/m);
  });

  it('reads the debug listener and the drain timeout', () => {
    const config = validateConfig({ version: '0.1', storage: { inmemory: {} }, http: { draintimeout: '2s', debug: { addr: ':5001', prometheus: { enabled: true } } } }, 't');
    assert.equal(config.http.draintimeout, 2000);
    assert.deepEqual(config.http.debug, { addr: ':5001', prometheus: { enabled: true, path: '/metrics' } });
    assert.match(problems(() => validateConfig({ version: '0.1', storage: { inmemory: {} }, http: { debug: { addr: 'nope' } } }, 't')).join(), /^http\.debug\.addr: expected host:port/);
  });

  it('requires exactly one storage driver', () => {
    assert.match(problems(() => validateConfig({ version: '0.1', storage: {} }, 't')).join(), /exactly one storage driver is required/);
    assert.match(
      problems(() => validateConfig({ version: '0.1', storage: { inmemory: {}, filesystem: { rootdirectory: '/x' } } }, 't')).join(),
      /exactly one storage driver is allowed, found filesystem and inmemory/,
    );
    assert.match(problems(() => validateConfig({ version: '0.1', storage: { s4: {} } }, 't')).join(), /storage\.s4: unknown key/);
  });

  it('requires version 0.1', () => {
    assert.match(problems(() => validateConfig({ storage: { inmemory: {} } }, 't')).join(), /^version: /);
    assert.match(problems(() => validateConfig({ version: '2', storage: { inmemory: {} } }, 't')).join(), /^version: /);
  });

  it('reports unreadable files and bad YAML', async () => {
    await assert.rejects(loadConfig('/nonexistent/config.yml', {}), (err: ConfigError) => /cannot read \/nonexistent\/config\.yml/.test(err.message));
    const file = await configFile('version: 0.1\nstorage: [unclosed\n');
    await assert.rejects(loadConfig(file, {}), (err: ConfigError) => /not valid YAML/.test(err.message));
  });

  it('parses Go durations', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1s'), 1000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('168h'), 604_800_000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('0'), 0);
    assert.equal(parseDuration('10'), undefined);
    assert.equal(parseDuration('1d'), undefined);
  });

  it('masks secrets', () => {
    assert.deepEqual(maskSecrets({ http: { secret: 'x', addr: ':5000' }, s3: { accesskey: 'a', secretkey: 'b', region: 'r' } }), {
      http: { secret: '********', addr: ':5000' },
      s3: { accesskey: '********', secretkey: '********', region: 'r' },
    });
  });
});

describe('berth config check', () => {
  const cli = ['--import', 'tsx', 'src/cli.ts'];

  it('prints the effective configuration with secrets masked and exits 0', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\nhttp:\n  secret: topsecret\n');
    const { stdout } = await run(process.execPath, [...cli, 'config', 'check', file]);
    const printed = JSON.parse(stdout);
    assert.equal(printed.http.secret, '********');
    assert.equal(printed.http.addr, ':5000');
    assert.deepEqual(printed.storage.inmemory, {});
    assert.ok(!stdout.includes('topsecret'));
  });

  it('prints every error and exits non-zero', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\nhttp:\n  addr: nowhere\nlog:\n  level: loud\n');
    await assert.rejects(run(process.execPath, [...cli, 'config', 'check', file]), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /http\.addr: expected host:port/);
      assert.match(err.stderr, /log\.level: /);
      return true;
    });
  });

  it('serve refuses to start on a bad configuration, naming the key', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\n  delete:\n    enabled: sometimes\n');
    await assert.rejects(run(process.execPath, [...cli, 'serve', file], { timeout: 20_000 }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /storage\.delete\.enabled/);
      return true;
    });
  });

  it('config check warns on stderr about a REGISTRY_* variable that names no key, and still exits 0', async () => {
    const file = await configFile('version: 0.1\nstorage:\n  inmemory:\n');
    const { stdout, stderr } = await run(process.execPath, [...cli, 'config', 'check', file], { env: { ...process.env, REGISTRY_PORT: 'tcp://10.0.0.7:5000' } });
    assert.match(stderr, /warning: environment variable REGISTRY_PORT names no configuration key \(port\); ignored/);
    assert.equal(JSON.parse(stdout).http.addr, ':5000');
  });
});

describe('berth --version, help and exit codes', () => {
  const cli = ['--import', 'tsx', 'src/cli.ts'];
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

  it('--version prints the package version and exits 0', async () => {
    for (const flag of ['--version', '-v', 'version']) {
      const { stdout } = await run(process.execPath, [...cli, flag]);
      assert.equal(stdout, `berth ${version}\n`);
    }
  });

  it('<command> --help prints that command\'s usage and exits 0 without running it', async () => {
    const { stdout } = await run(process.execPath, [...cli, 'serve', '--help'], { timeout: 20_000 });
    assert.match(stdout, /^usage: berth serve \[CONFIG\.yml\]/);
    const gc = await run(process.execPath, [...cli, 'garbage-collect', '-h']);
    assert.match(gc.stdout, /^usage: berth garbage-collect \[--dry-run\]/);
    const viaHelp = await run(process.execPath, [...cli, 'help', 'config']);
    assert.match(viaHelp.stdout, /^usage: berth config check CONFIG\.yml/);
  });

  it('help lists every command and the exit codes; an unknown command exits 2 with the usage on stderr', async () => {
    const { stdout } = await run(process.execPath, [...cli, 'help']);
    for (const command of ['serve', 'config check', 'garbage-collect', '--version']) assert.ok(stdout.includes(`berth ${command}`), command);
    assert.match(stdout, /exit codes: 0 done, 1 failed/);
    await assert.rejects(run(process.execPath, [...cli, 'frobnicate']), (err: { code: number; stderr: string; stdout: string }) => {
      assert.equal(err.code, 2);
      assert.equal(err.stdout, '');
      assert.match(err.stderr, /^berth: unknown command "frobnicate"\nusage:/);
      return true;
    });
  });
});
