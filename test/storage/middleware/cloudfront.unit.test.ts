/**
 * The cloudfront middleware without a store: which clients get the CDN URL, the IP-range refresh
 * on the Scheduler (a ManualClock moves time), and the start-up errors about the signing key.
 * The end-to-end redirects against Ceph are in test/http/s3-redirects.test.ts.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Logger } from 'pino';
import { Scheduler } from '../../../src/scheduler/scheduler.js';
import { StorageOptionError, type RedirectRequest } from '../../../src/storage/driver.js';
import { ForwardingDriver } from '../../../src/storage/forwarding.js';
import { InMemoryDriver } from '../../../src/storage/inmemory.js';
import { CloudFrontMiddleware, type CloudFrontOptions } from '../../../src/storage/middleware/cloudfront.js';
import { ManualClock } from '../../helpers/manual-clock.js';

const HOUR = 3_600_000;

/** an inner driver with URLs of its own, as the S3 driver has */
class StoreURLs extends ForwardingDriver {
  override async redirectURL(_req: RedirectRequest, path: string): Promise<string> {
    return `https://store.example${path}`;
  }
}

/** a logger that counts the IP-range loads */
function countingLogger() {
  const counts = { loaded: 0, failed: 0 };
  const logger = {
    info: () => void counts.loaded++,
    warn: () => void counts.failed++,
    error: () => {},
  } as unknown as Logger;
  return { logger, counts };
}

/** waits (briefly, polling) until `done` holds: a refresh reads a file, which takes real I/O */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(done(), 'condition not reached');
}

describe('cloudfront middleware', () => {
  let dir: string;
  let keyFile: string;
  let ranges: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-cloudfront-unit-'));
    keyFile = join(dir, 'key.pem');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }));
    ranges = join(dir, 'ip-ranges.json');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const writeRanges = (cidr: string) => writeFile(ranges, JSON.stringify({ prefixes: [{ ip_prefix: cidr, region: 'us-west-2' }] }));
  const options = (extra: Partial<CloudFrontOptions> = {}): CloudFrontOptions => ({
    baseurl: 'https://cdn.example/',
    privatekey: keyFile,
    keypairid: 'K1',
    duration: 20 * 60_000,
    ipfilteredby: 'aws',
    updatefrequency: 12 * HOUR,
    iprangesurl: ranges,
    ...extra,
  });
  /** 'cdn' or 'store', as the middleware sends a client at `ip` */
  const via = async (cdn: CloudFrontMiddleware, ip: string) => {
    const url = (await cdn.redirectURL({ method: 'GET', clientIP: ip }, '/a/data'))!;
    return url.startsWith('https://cdn.example/a/data?') ? 'cdn' : url === 'https://store.example/a/data' ? 'store' : url;
  };

  it('reloads the IP ranges every updatefrequency on the scheduler, and stops at close', async () => {
    await writeRanges('127.0.0.0/8');
    const clock = new ManualClock();
    const { logger, counts } = countingLogger();
    const scheduler = new Scheduler(logger, clock);
    const cdn = new CloudFrontMiddleware(new StoreURLs(new InMemoryDriver()), options(), { scheduler, logger });
    try {
      assert.equal(await via(cdn, '127.0.0.1'), 'store');
      assert.equal(await via(cdn, '::ffff:127.0.0.1'), 'store');
      assert.equal(await via(cdn, '10.1.2.3'), 'cdn');
      assert.equal(counts.loaded, 1);

      await writeRanges('10.0.0.0/8');
      await clock.advance(12 * HOUR - 1);
      assert.equal(counts.loaded, 1);
      assert.equal(await via(cdn, '127.0.0.1'), 'store');
      await clock.advance(1);
      await until(() => counts.loaded === 2);
      assert.equal(await via(cdn, '127.0.0.1'), 'cdn');
      assert.equal(await via(cdn, '10.1.2.3'), 'store');

      // a source that cannot be read keeps the ranges loaded before
      await writeFile(ranges, 'not json');
      await clock.advance(12 * HOUR);
      await until(() => counts.failed === 1);
      assert.equal(await via(cdn, '10.1.2.3'), 'store');
    } finally {
      await cdn.close();
    }
    await writeRanges('127.0.0.0/8');
    await clock.advance(48 * HOUR);
    assert.deepEqual(counts, { loaded: 2, failed: 1 });
    await scheduler.close();
  });

  it('sends every client to the CDN with ipfilteredby none, and schedules nothing', async () => {
    const scheduler = { every: () => assert.fail('nothing to refresh') };
    const cdn = new CloudFrontMiddleware(new StoreURLs(new InMemoryDriver()), options({ ipfilteredby: 'none' }), { scheduler });
    assert.equal(await via(cdn, '127.0.0.1'), 'cdn');
    await cdn.close();
  });

  it('refuses a missing, non-PEM or non-RSA key with a StorageOptionError naming privatekey', async () => {
    const scheduler = new Scheduler(countingLogger().logger, new ManualClock());
    const notPem = join(dir, 'junk.pem');
    await writeFile(notPem, 'not a key');
    const ec = join(dir, 'ec.pem');
    await writeFile(ec, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    for (const [file, problem] of [
      ['/nonexistent/key.pem', /^cannot read \/nonexistent\/key\.pem: /],
      [notPem, /is not a PEM private key/],
      [ec, /holds a ec key; CloudFront signs with RSA keys only$/],
    ] as const) {
      assert.throws(
        () => new CloudFrontMiddleware(new InMemoryDriver(), options({ privatekey: file }), { scheduler }),
        (err: unknown) => err instanceof StorageOptionError && err.option === 'privatekey' && problem.test(err.problem),
      );
    }
    await scheduler.close();
  });
});
