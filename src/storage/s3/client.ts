/**
 * The S3 client side of the driver: the SDK client built from the options (endpoint, TLS,
 * retries, logging) and the mapping of SDK failures to storage errors. The object operations on
 * the bucket are bucket.ts.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  S3Client,
  S3ServiceException,
  type ObjectCannedACL,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { StorageError, StorageUnavailableError } from '../driver.js';

export const NAME = 's3';

/** storage.s3 (spec table 2.9) with the defaults the configuration fills in */
export interface S3Parameters {
  region: string;
  /** an S3-compatible store, e.g. "http://127.0.0.1:7480" or "minio.example.com:9000" */
  regionendpoint?: string;
  forcepathstyle: boolean;
  bucket: string;
  accesskey?: string;
  secretkey?: string;
  encrypt: boolean;
  /** the KMS key id, with encrypt */
  keyid?: string;
  secure: boolean;
  skipverify: boolean;
  /** bytes per part of a writer's multipart upload */
  chunksize: number;
  multipartcopychunksize: number;
  multipartcopymaxconcurrency: number;
  multipartcopythresholdsize: number;
  /** key prefix of everything the driver stores: '', '/registry', 'a/b' */
  rootdirectory: string;
  storageclass: 'STANDARD' | 'REDUCED_REDUNDANCY';
  useragent?: string;
  usedualstack?: boolean;
  accelerate?: boolean;
  usefipsendpoint: boolean;
  objectacl: ObjectCannedACL;
  /** 'off' or one of the SDK's debug levels */
  loglevel: string;
}

export interface S3DriverOptions extends S3Parameters {
  /** how long pre-signed redirect URLs stay valid (default 20 minutes) */
  redirectExpiryMs?: number;
  /** for loglevel other than off */
  logger?: Logger;
  /** attempts per request, retries included (default 5) */
  maxAttempts?: number;
  /** parts of one multipart upload (default S3's 10,000; tests lower it) */
  maxParts?: number;
  /** client overrides, for tests */
  clientConfig?: Partial<S3ClientConfig>;
}

/** the endpoint URL: regionendpoint with the scheme chosen by `secure` when it has none */
function endpointURL(p: S3Parameters): string | undefined {
  if (p.regionendpoint === undefined) return undefined;
  if (/^https?:\/\//.test(p.regionendpoint)) return p.regionendpoint;
  return `${p.secure ? 'https' : 'http'}://${p.regionendpoint}`;
}

function sdkLogger(level: string, logger: Logger | undefined): S3ClientConfig['logger'] {
  if (level === 'off' || logger === undefined) return undefined;
  const log = logger.child({ component: 's3-client', loglevel: level });
  return {
    trace: (...args: unknown[]) => log.trace({ sdk: args }),
    debug: (...args: unknown[]) => log.debug({ sdk: args }),
    info: (...args: unknown[]) => log.debug({ sdk: args }),
    warn: (...args: unknown[]) => log.warn({ sdk: args }),
    error: (...args: unknown[]) => log.error({ sdk: args }),
  };
}

export function buildS3Client(options: S3DriverOptions): S3Client {
  const endpoint = endpointURL(options);
  const agentOptions = { keepAlive: true, maxSockets: Math.max(64, options.multipartcopymaxconcurrency + 8) };
  const config: S3ClientConfig = {
    region: options.region,
    endpoint,
    forcePathStyle: options.forcepathstyle,
    useDualstackEndpoint: options.usedualstack,
    useAccelerateEndpoint: options.accelerate,
    useFipsEndpoint: options.usefipsendpoint,
    customUserAgent: options.useragent,
    credentials:
      options.accesskey && options.secretkey ? { accessKeyId: options.accesskey, secretAccessKey: options.secretkey } : undefined,
    // the SDK's default checksums (since 3.729) break S3-compatible stores (radosgw: 411
    // MissingContentLength; R2, MinIO, B2) and pre-signed GETs (x-amz-checksum-mode), on AWS too
    // (aws-sdk-js-v3#6810, #6994): sent and checked only where an operation requires them
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // throttling, 5xx and network errors are retried with exponential back-off (standard mode)
    maxAttempts: options.maxAttempts ?? 5,
    retryMode: 'standard',
    requestHandler: {
      connectionTimeout: 10_000,
      // no byte for this long on an open request: fail it (and retry) instead of hanging
      requestTimeout: 120_000,
      httpAgent: new HttpAgent(agentOptions),
      httpsAgent: new HttpsAgent({ ...agentOptions, rejectUnauthorized: !options.skipverify }),
    },
    logger: sdkLogger(options.loglevel, options.logger),
    ...options.clientConfig,
  };
  if (!options.secure && endpoint === undefined) {
    // native S3 over plain HTTP (spec 2.9: secure false)
    config.endpoint = `http://s3.${options.region}.amazonaws.com`;
  }
  const client = new S3Client(config);
  if (options.logger) logRetries(client, options.logger);
  return client;
}

/** a request the SDK had to send more than once is logged (once, when it ends) with its attempts */
function logRetries(client: S3Client, logger: Logger): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const attempts = (meta: unknown) => (meta as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;
      try {
        const out = await next(args);
        if (attempts(out.output) > 1) logger.warn({ driver: NAME, operation: context.commandName, attempts: attempts(out.output) }, 'S3 request succeeded after retries');
        return out;
      } catch (err) {
        if (attempts(err) > 1) logger.warn({ driver: NAME, operation: context.commandName, attempts: attempts(err), error: errorName(err) || String(err) }, 'S3 request failed after retries');
        throw err;
      }
    },
    { step: 'initialize', name: 'berthRetryLog' },
  );
}

export function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function errorName(err: unknown): string {
  return (err as { name?: string; Code?: string })?.Code ?? (err as { name?: string })?.name ?? '';
}

export function isNotFound(err: unknown): boolean {
  const name = errorName(err);
  return name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload' || httpStatus(err) === 404;
}

/** what the SDK could not do after its retries, as a StorageError the HTTP edge understands */
export function toStorageError(err: unknown, what: string): StorageError {
  if (err instanceof StorageError) return err;
  const status = httpStatus(err);
  const message = err instanceof Error ? err.message : String(err);
  const name = errorName(err);
  const throttled = status === 429 || status === 503 || /SlowDown|Throttl|RequestLimitExceeded/.test(name);
  if (throttled || status === undefined || status >= 500 || !(err instanceof S3ServiceException)) {
    // network errors, timeouts, 5xx and throttling that outlasted the retries: temporary
    return new StorageUnavailableError(`${NAME}: ${what}: ${name ? `${name}: ` : ''}${message}`, NAME, { cause: err });
  }
  return new StorageError(`${NAME}: ${what}: ${status} ${name}: ${message}`, NAME, { cause: err });
}
