/**
 * The content-delivery middleware (spec 2.10, Distribution's `cloudfront` storage middleware):
 * blob reads redirect to `baseurl` + the object's path, signed with a canned policy (RSA-SHA1,
 * URL-safe base64, `Expires`, `Signature`, `Key-Pair-Id`), so edge servers serve pulls. Everything
 * else (pushes, metadata) goes to the wrapped driver unchanged.
 *
 * With `ipfilteredby: aws|awsregion`, clients inside AWS's published IP ranges (of the given
 * regions) get the wrapped driver's own redirect (the pre-signed S3 URL) instead: traffic inside
 * AWS need not pass the CDN. The ranges are read from `iprangesurl` (http(s) URL, file:// URL or a
 * local path) at start and every `updatefrequency`.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { fileURLToPath } from 'node:url';
import { getSignedUrl } from '@aws-sdk/cloudfront-signer';
import type { Logger } from 'pino';
import type { Scheduler } from '../../scheduler/scheduler.js';
import { checkPath, StorageOptionError, type RedirectRequest, type StorageDriver } from '../driver.js';
import { ForwardingDriver } from '../forwarding.js';

const NAME = 'cloudfront';

/** middleware.storage[].options of the cloudfront middleware (spec 2.10), defaults filled in */
export interface CloudFrontOptions {
  /** the distribution's URL, e.g. "https://d111111abcdef8.cloudfront.net/" */
  baseurl: string;
  /** path of the PEM file holding the RSA private key */
  privatekey: string;
  keypairid: string;
  /** milliseconds a signed URL stays valid */
  duration: number;
  ipfilteredby: 'none' | 'aws' | 'awsregion';
  /** comma-separated regions, with ipfilteredby: awsregion */
  awsregion?: string;
  /** milliseconds between reloads of the IP ranges */
  updatefrequency: number;
  /** http(s) URL, file:// URL or local path of AWS's ip-ranges.json */
  iprangesurl: string;
}

/** reads and checks the signing key; every problem is a StorageOptionError naming `privatekey` */
export function loadSigningKey(file: string): { pem: string; keyObject: KeyObject } {
  const problem = (text: string) => new StorageOptionError('privatekey', text, NAME);
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw problem(`cannot read ${file}: ${(err as Error).message}`);
  }
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(pem);
  } catch (err) {
    throw problem(`${file} is not a PEM private key: ${(err as Error).message}`);
  }
  if (keyObject.asymmetricKeyType !== 'rsa') {
    throw problem(`${file} holds a ${keyObject.asymmetricKeyType} key; CloudFront signs with RSA keys only`);
  }
  // the signer wants PKCS#1 or PKCS#8 PEM text: hand it a normalized PKCS#1 export
  return { pem: keyObject.export({ type: 'pkcs1', format: 'pem' }).toString(), keyObject };
}

interface IPRangesFile {
  prefixes?: { ip_prefix?: string; region?: string }[];
  ipv6_prefixes?: { ipv6_prefix?: string; region?: string }[];
}

/** the ranges of `data` (of the given regions, or all) as a BlockList */
export function parseIPRanges(data: IPRangesFile, regions?: Set<string>): { list: BlockList; count: number } {
  const list = new BlockList();
  let count = 0;
  const add = (cidr: string | undefined, region: string | undefined, type: 'ipv4' | 'ipv6') => {
    if (!cidr || (regions && !regions.has(region ?? ''))) return;
    const [net, bits] = cidr.split('/');
    try {
      list.addSubnet(net, Number(bits), type);
      count++;
    } catch {
      // a malformed entry: skipped
    }
  };
  for (const p of data.prefixes ?? []) add(p.ip_prefix, p.region, 'ipv4');
  for (const p of data.ipv6_prefixes ?? []) add(p.ipv6_prefix, p.region, 'ipv6');
  return { list, count };
}

/**
 * Overrides redirectURL; everything else goes to the wrapped driver. The IP ranges are reloaded by
 * a task on the app's Scheduler, stopped by close().
 */
export class CloudFrontMiddleware extends ForwardingDriver {
  private readonly baseURL: string;
  private readonly pem: string;
  private ranges: BlockList | undefined;
  private rangesLoaded: Promise<void> | undefined;
  private stopRefresh: (() => void) | undefined;
  private readonly logger: Logger | undefined;

  constructor(
    inner: StorageDriver,
    private readonly options: CloudFrontOptions,
    context: { scheduler: Pick<Scheduler, 'every'>; logger?: Logger },
  ) {
    super(inner);
    this.baseURL = options.baseurl.replace(/\/+$/, '');
    this.pem = loadSigningKey(options.privatekey).pem;
    this.logger = context.logger;
    if (options.ipfilteredby !== 'none') {
      this.rangesLoaded = this.loadRanges();
      this.stopRefresh = context.scheduler.every({
        name: 'cloudfront IP-range refresh',
        interval: options.updatefrequency,
        run: (signal) => this.loadRanges(signal),
      });
    }
  }

  private async loadRanges(signal?: AbortSignal): Promise<void> {
    const source = this.options.iprangesurl;
    try {
      let text: string;
      if (/^https?:\/\//.test(source)) {
        const timeout = AbortSignal.timeout(30_000);
        const res = await fetch(source, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        text = await res.text();
      } else {
        text = await readFile(source.startsWith('file:') ? fileURLToPath(source) : source, 'utf8');
      }
      const regions =
        this.options.ipfilteredby === 'awsregion'
          ? new Set((this.options.awsregion ?? '').split(',').map((r) => r.trim()).filter(Boolean))
          : undefined;
      const { list, count } = parseIPRanges(JSON.parse(text) as IPRangesFile, regions);
      this.ranges = list;
      this.logger?.info({ source, ranges: count }, 'cloudfront: IP ranges loaded');
    } catch (err) {
      // keep the previous ranges; without any, every client goes through the CDN
      this.logger?.warn({ err, source }, 'cloudfront: cannot load IP ranges');
    }
  }

  /** the client is inside the filtered AWS ranges: it gets the store's own URL */
  private async inAWS(ip: string | undefined): Promise<boolean> {
    if (this.options.ipfilteredby === 'none' || ip === undefined) return false;
    await this.rangesLoaded;
    const addr = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
    if (!this.ranges) return false;
    if (isIPv4(addr)) return this.ranges.check(addr, 'ipv4');
    if (isIPv6(addr)) return this.ranges.check(addr, 'ipv6');
    return false;
  }

  override async redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    checkPath(path, this.name); // the CDN URL is made here, without the inner driver
    if (await this.inAWS(req.clientIP)) return this.inner.redirectURL(req, path);
    return getSignedUrl({
      url: this.baseURL + path,
      keyPairId: this.options.keypairid,
      privateKey: this.pem,
      dateLessThan: new Date(Date.now() + this.options.duration),
    });
  }

  override async close(): Promise<void> {
    this.stopRefresh?.();
    await super.close();
  }
}
