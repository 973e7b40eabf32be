/** storage.s3 (spec table 2.9), storage.redirect.expiry and middleware.storage (spec 2.10) at start-up. */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createApp } from '../../src/app.js';
import { configProblems } from '../helpers/config.js';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { pino } from 'pino';

const MiB = 1024 * 1024;
const minimal = { region: 'us-east-1', bucket: 'registry' };

function config(s3: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return validateConfig({ version: '0.1', storage: { s3 }, ...extra }, 'test');
}

const problems = configProblems;

describe('storage.s3 configuration', () => {
  it('applies every default of table 2.9', () => {
    const s3 = config(minimal).storage.s3!;
    assert.deepEqual(
      { ...s3 },
      {
        region: 'us-east-1',
        bucket: 'registry',
        forcepathstyle: false,
        encrypt: false,
        secure: true,
        skipverify: false,
        v4auth: true,
        chunksize: 10 * MiB,
        multipartcopychunksize: 32 * MiB,
        multipartcopymaxconcurrency: 100,
        multipartcopythresholdsize: 32 * MiB,
        rootdirectory: '',
        storageclass: 'STANDARD',
        usefipsendpoint: false,
        objectacl: 'private',
        loglevel: 'off',
      },
    );
    const c = config(minimal);
    assert.equal(c.storage.redirect.expiry, 20 * 60_000);
    assert.deepEqual(c.middleware.storage, []);
  });

  it('accepts every parameter, also as strings from REGISTRY_* variables', () => {
    const s3 = config({
      accesskey: 'AK',
      secretkey: 'SK',
      region: 'eu-west-1',
      regionendpoint: 'http://127.0.0.1:7480',
      forcepathstyle: 'true',
      bucket: 'b',
      encrypt: 'true',
      keyid: 'k',
      secure: 'false',
      skipverify: 'true',
      v4auth: 'true',
      chunksize: String(5 * MiB + 1),
      multipartcopychunksize: '33554432',
      multipartcopymaxconcurrency: '10',
      multipartcopythresholdsize: '0',
      rootdirectory: '/registry/one',
      storageclass: 'REDUCED_REDUNDANCY',
      useragent: 'berth',
      usedualstack: 'false',
      accelerate: 'false',
      usefipsendpoint: 'false',
      objectacl: 'bucket-owner-full-control',
      loglevel: 'debugwithrequestretries',
    }).storage.s3!;
    assert.equal(s3.chunksize, 5 * MiB + 1);
    assert.equal(s3.secure, false);
    assert.equal(s3.objectacl, 'bucket-owner-full-control');
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['region', { bucket: 'b' }, /^storage\.s3\.region: required/],
    ['bucket', { region: 'r' }, /^storage\.s3\.bucket: required/],
    ['forcepathstyle', { ...minimal, regionendpoint: 'http://127.0.0.1:7480' }, /^storage\.s3\.forcepathstyle: must be true when regionendpoint is set/],
    ['v4auth (eu-central-1)', { ...minimal, region: 'eu-central-1', v4auth: false }, /^storage\.s3\.v4auth: region eu-central-1 accepts only signature version 4/],
    ['v4auth', { ...minimal, v4auth: false }, /^storage\.s3\.v4auth: signature version 2 is not implemented/],
    ['chunksize (5 MiB)', { ...minimal, chunksize: 5 * MiB }, /^storage\.s3\.chunksize: expected a number of bytes greater than 5242880/],
    ['chunksize (> 5 GiB)', { ...minimal, chunksize: 5 * 1024 * MiB + 1 }, /^storage\.s3\.chunksize: /],
    ['chunksize (text)', { ...minimal, chunksize: '10MB' }, /^storage\.s3\.chunksize: /],
    ['multipartcopychunksize', { ...minimal, multipartcopychunksize: MiB }, /^storage\.s3\.multipartcopychunksize: /],
    ['multipartcopymaxconcurrency', { ...minimal, multipartcopymaxconcurrency: 0 }, /^storage\.s3\.multipartcopymaxconcurrency: /],
    ['storageclass', { ...minimal, storageclass: 'GLACIER' }, /^storage\.s3\.storageclass: expected STANDARD or REDUCED_REDUNDANCY/],
    ['objectacl', { ...minimal, objectacl: 'everyone' }, /^storage\.s3\.objectacl: expected a canned ACL: private, public-read/],
    ['loglevel', { ...minimal, loglevel: 'verbose' }, /^storage\.s3\.loglevel: expected one of off, debug, debugwithsigning/],
    ['unknown key', { ...minimal, bucketname: 'x' }, /^storage\.s3\.bucketname: unknown key/],
    ['secure', { ...minimal, secure: 'yes' }, /^storage\.s3\.secure: /],
  ];
  for (const [name, s3, message] of bad) {
    it(`refuses a bad ${name}, naming the key`, () => {
      const found = problems(() => config(s3));
      assert.ok(found.some((p) => message.test(p)), found.join('\n'));
    });
  }

  it('refuses s3 together with another driver', () => {
    const found = problems(() => validateConfig({ version: '0.1', storage: { s3: minimal, inmemory: {} } }, 'test'));
    assert.ok(found.some((p) => /exactly one storage driver is allowed, found inmemory and s3/.test(p)), found.join('\n'));
  });
});

describe('middleware.storage: cloudfront configuration', () => {
  const logger = pino({ level: 'silent' });
  const entry = (options: Record<string, unknown>) => ({ middleware: { storage: [{ name: 'cloudfront', options }] } });

  async function keyFile(type: 'rsa' | 'ec'): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'berth-cf-key-'));
    const { privateKey } =
      type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const file = join(dir, `${type}.pem`);
    await writeFile(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    return file;
  }

  it('applies the defaults: duration 20m, ipfilteredby none, updatefrequency 12h', async () => {
    const c = validateConfig({ version: '0.1', storage: { inmemory: {} }, ...entry({ baseurl: 'https://cdn.example.com/', privatekey: '/k.pem', keypairid: 'K1' }) }, 't');
    const options = c.middleware.storage[0].options;
    assert.equal(options.duration, 20 * 60_000);
    assert.equal(options.ipfilteredby, 'none');
    assert.equal(options.updatefrequency, 12 * 3600_000);
    assert.equal(options.iprangesurl, 'https://ip-ranges.amazonaws.com/ip-ranges.json');
  });

  it('refuses unknown middleware, a bad baseurl, and awsregion filtering without regions', () => {
    const base = { version: '0.1', storage: { inmemory: {} } };
    assert.ok(problems(() => validateConfig({ ...base, middleware: { storage: [{ name: 'redirect', options: {} }] } }, 't')).some((p) => /cloudfront is the only storage middleware/.test(p)));
    assert.ok(problems(() => validateConfig({ ...base, ...entry({ baseurl: 'cdn', privatekey: '/k', keypairid: 'K' }) }, 't')).some((p) => /^middleware\.storage\.0\.options\.baseurl: /.test(p)));
    assert.ok(
      problems(() => validateConfig({ ...base, ...entry({ baseurl: 'https://c/', privatekey: '/k', keypairid: 'K', ipfilteredby: 'awsregion' }) }, 't')).some((p) =>
        /^middleware\.storage\.0\.options\.awsregion: required with ipfilteredby: awsregion/.test(p),
      ),
    );
  });

  it('stops start-up on a missing, unreadable or non-RSA key, with a clear message', async () => {
    const start = (privatekey: string) => () =>
      createApp(validateConfig({ version: '0.1', storage: { inmemory: {} }, ...entry({ baseurl: 'https://cdn.example.com', privatekey, keypairid: 'K1' }) }, 't'), { logger });
    await assert.rejects(start('/nonexistent/key.pem'), (err: Error) => err instanceof ConfigError && /privatekey: cannot read \/nonexistent\/key\.pem/.test(err.message));
    const notPem = join(await mkdtemp(join(tmpdir(), 'berth-cf-')), 'junk.pem');
    await writeFile(notPem, 'not a key');
    await assert.rejects(start(notPem), (err: Error) => err instanceof ConfigError && /is not a PEM private key/.test(err.message));
    await assert.rejects(start(await keyFile('ec')), (err: Error) => err instanceof ConfigError && /holds a ec key; CloudFront signs with RSA keys only/.test(err.message));
    const app = await start(await keyFile('rsa'))();
    await app.close();
  });
});
