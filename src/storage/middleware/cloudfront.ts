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
import { ConfigError } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import type { FileInfo, FileWriter, RedirectRequest, StorageDriver, WalkFn, WalkOptions } from '../driver.js';
import { checkPath } from '../driver.js';

export type CloudFrontOptions = Config['middleware']['storage'][number]['options'];

/** reads and checks the signing key; every problem is a ConfigError naming the option */
export function loadSigningKey(file: string, key: string): { pem: string; keyObject: KeyObject } {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${key}.privatekey: cannot read ${file}: ${(err as Error).message}`], 'middleware.storage');
  }
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(pem);
  } catch (err) {
    throw new ConfigError([`${key}.privatekey: ${file} is not a PEM private key: ${(err as Error).message}`], 'middleware.storage');
  }
  if (keyObject.asymmetricKeyType !== 'rsa') {
    throw new ConfigError([`${key}.privatekey: ${file} holds a ${keyObject.asymmetricKeyType} key; CloudFront signs with RSA keys only`], 'middleware.storage');
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

export class CloudFrontMiddleware implements StorageDriver {
  readonly name: string;
  private readonly baseURL: string;
  private readonly pem: string;
  private ranges: BlockList | undefined;
  private rangesLoaded: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly logger: Logger | undefined;

  constructor(
    private readonly inner: StorageDriver,
    private readonly options: CloudFrontOptions,
    context: { logger?: Logger; key?: string } = {},
  ) {
    this.name = inner.name;
    this.baseURL = options.baseurl.replace(/\/+$/, '');
    this.pem = loadSigningKey(options.privatekey, context.key ?? 'middleware.storage.0.options').pem;
    this.logger = context.logger;
    if (options.ipfilteredby !== 'none') {
      this.rangesLoaded = this.loadRanges();
      this.timer = setInterval(() => void this.loadRanges(), options.updatefrequency);
      this.timer.unref();
    }
  }

  private async loadRanges(): Promise<void> {
    const source = this.options.iprangesurl;
    try {
      let text: string;
      if (/^https?:\/\//.test(source)) {
        const res = await fetch(source, { signal: AbortSignal.timeout(30_000) });
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

  async redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    checkPath(path, this.inner.name);
    if (await this.inAWS(req.clientIP)) return this.inner.redirectURL(req, path);
    return getSignedUrl({
      url: this.baseURL + path,
      keyPairId: this.options.keypairid,
      privateKey: this.pem,
      dateLessThan: new Date(Date.now() + this.options.duration),
    });
  }

  getContent(path: string): Promise<Buffer> {
    return this.inner.getContent(path);
  }
  putContent(path: string, data: Buffer): Promise<void> {
    return this.inner.putContent(path, data);
  }
  reader(path: string, offset?: number, length?: number) {
    return this.inner.reader(path, offset, length);
  }
  writer(path: string, append: boolean): Promise<FileWriter> {
    return this.inner.writer(path, append);
  }
  stat(path: string): Promise<FileInfo> {
    return this.inner.stat(path);
  }
  list(path: string): Promise<string[]> {
    return this.inner.list(path);
  }
  listNames(path: string): Promise<string[]> {
    return this.inner.listNames(path);
  }
  childrenVersion(path: string): Promise<string | undefined> {
    return this.inner.childrenVersion(path);
  }
  move(src: string, dst: string): Promise<void> {
    return this.inner.move(src, dst);
  }
  delete(path: string): Promise<void> {
    return this.inner.delete(path);
  }
  walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return this.inner.walk(path, fn, options);
  }
  async ready(): Promise<void> {
    await this.inner.ready?.();
  }
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.inner.close?.();
  }
}
