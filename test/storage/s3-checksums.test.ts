/**
 * AWS SDK v3 (from 3.729) adds CRC32 checksums to every upload and asks for checksum validation on
 * every download by default; Cloudflare R2, MinIO, Backblaze B2 and some pre-signed GETs break on
 * them (aws-sdk-js-v3#6810, #6994). berth sets both to "when required", for every store, AWS
 * itself included: these tests assert the headers of a PUT, of a multipart upload and the query
 * of pre-signed GET/HEAD URLs, against a recording fake endpoint and for AWS's own endpoints.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { S3Driver } from '../../src/storage/s3/driver.js';
import { startFakeS3, type FakeS3 } from '../helpers/fake-s3.js';

const MiB = 1024 * 1024;

function driverFor(params: Record<string, unknown>): S3Driver {
  const config = validateConfig({ version: '0.1', storage: { s3: { region: 'us-east-1', accesskey: 'k', secretkey: 's', bucket: 'b', ...params } } }, 'test');
  return new S3Driver({ ...config.storage.s3!, maxAttempts: 1 });
}

/** what the SDK's default checksums add to a request */
function checksumHeaders(headers: IncomingHttpHeaders): string[] {
  const found = Object.keys(headers).filter((name) => name.startsWith('x-amz-checksum-') || name === 'x-amz-sdk-checksum-algorithm' || name === 'x-amz-trailer' || name === 'x-amz-decoded-content-length');
  if (headers['content-encoding']?.includes('aws-chunked')) found.push('content-encoding: aws-chunked');
  if (String(headers['x-amz-content-sha256'] ?? '').startsWith('STREAMING-')) found.push(`x-amz-content-sha256: ${headers['x-amz-content-sha256']}`);
  return found;
}

/** the checksum parameters of a pre-signed URL */
function checksumParams(url: string): string[] {
  return [...new URL(url).searchParams.keys()].filter((key) => /checksum/i.test(key));
}

describe('s3: no default checksums (fake endpoint)', () => {
  let fake: FakeS3;
  before(async () => {
    fake = await startFakeS3();
  });
  after(() => fake.close());

  it('PutObject, CreateMultipartUpload, UploadPart and CompleteMultipartUpload carry no checksum headers', async () => {
    const driver = driverFor({ regionendpoint: fake.endpoint, forcepathstyle: true, chunksize: 6 * MiB });
    try {
      fake.requests.length = 0;
      await driver.putContent('/a/small', Buffer.from('x'));
      const w = await driver.writer('/a/large', false);
      await w.write(Buffer.alloc(7 * MiB));
      await w.commit();
      const kinds = (method: string, test: (u: URL) => boolean) => fake.requests.filter((r) => r.method === method && test(new URL(r.url, 'http://x')));
      const puts = kinds('PUT', (u) => !u.searchParams.has('partNumber'));
      const parts = kinds('PUT', (u) => u.searchParams.has('partNumber'));
      const create = kinds('POST', (u) => u.searchParams.has('uploads'));
      const complete = kinds('POST', (u) => u.searchParams.has('uploadId'));
      for (const [what, list] of [['PutObject', puts], ['UploadPart', parts], ['CreateMultipartUpload', create], ['CompleteMultipartUpload', complete]] as const) {
        assert.ok(list.length > 0, `${what} was sent`);
        for (const r of list) assert.deepEqual(checksumHeaders(r.headers), [], `${what} ${r.url}`);
      }
      // a plain body with its length, which every S3-compatible store takes
      const small = puts.find((r) => r.url.split('?')[0].endsWith('/a/small'))!;
      assert.equal(small.headers['content-length'], '1');
    } finally {
      await driver.close();
    }
  });

  it('pre-signed GET and HEAD URLs ask for no checksum mode', async () => {
    const driver = driverFor({ regionendpoint: fake.endpoint, forcepathstyle: true });
    try {
      for (const method of ['GET', 'HEAD'] as const) {
        const url = await driver.redirectURL({ method }, '/a/small');
        assert.ok(url, method);
        assert.deepEqual(checksumParams(url), [], url);
      }
    } finally {
      await driver.close();
    }
  });
});

describe("s3: no default checksums on AWS's own endpoints", () => {
  it('pre-signed GET URLs ask for no checksum mode, and the client computes and validates checksums only when required', async () => {
    const driver = driverFor({ region: 'eu-west-1' });
    try {
      const url = await driver.redirectURL({ method: 'GET' }, '/docker/registry/v2/blobs/sha256/ab/abc/data');
      assert.ok(url);
      assert.match(new URL(url).hostname, /amazonaws\.com$/);
      assert.deepEqual(checksumParams(url), [], url);
      const config = (driver as unknown as { client: { config: { requestChecksumCalculation: () => Promise<string>; responseChecksumValidation: () => Promise<string> } } }).client.config;
      assert.equal(await config.requestChecksumCalculation(), 'WHEN_REQUIRED');
      assert.equal(await config.responseChecksumValidation(), 'WHEN_REQUIRED');
    } finally {
      await driver.close();
    }
  });
});
