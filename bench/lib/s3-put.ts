/**
 * PutObject as a plain HTTP PUT over undici, signed (SigV4) here: for the hundreds of thousands of
 * small objects of the S3 scale set (scale-data.ts). Through the SDK client a PUT of a 71-byte
 * link cost the bench process 1.2 ms of CPU (its middleware stack), a third of the CPU the PUT cost
 * altogether (radosgw 1.6 ms, the OSD 0.8 ms), on a machine where the CPU is what runs out; the
 * signature costs some tens of µs. The same reasoning as berth's own reads
 * (src/storage/s3/signed-http.ts), for writes of a bench. Path-style addressing, as the tests'
 * Ceph is reached.
 */
import { createHash, createHmac } from 'node:crypto';
import { Pool } from 'undici';

const SIGNED_HEADERS = 'host;x-amz-content-sha256;x-amz-date';
/** attempts per object: a loaded radosgw may answer 503 or drop a connection */
const ATTEMPTS = 3;

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export class SignedPut {
  private readonly pool: Pool;
  private readonly host: string;
  /** the day's signing key (SigV4 derives it per date, region and service) */
  private signingKey = { date: '', key: Buffer.alloc(0) };

  constructor(
    endpoint: string,
    private readonly bucket: string,
    private readonly credentials: Credentials,
    /** connections to the endpoint: as many as the PUTs the caller keeps in flight */
    connections: number,
    private readonly region = 'us-east-1',
  ) {
    const url = new URL(endpoint);
    this.host = url.host;
    this.pool = new Pool(url.origin, { connections, pipelining: 1 });
  }

  async put(key: string, data: Buffer | string): Promise<void> {
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    for (let attempt = 1; ; attempt++) {
      try {
        const { statusCode, body: answer } = await this.pool.request({ path: this.path(key), method: 'PUT', body, headers: this.sign(key, body) });
        const text = await answer.text();
        if (statusCode === 200) return;
        if (statusCode < 500 || attempt === ATTEMPTS) throw new Error(`PUT ${key}: HTTP ${statusCode}: ${text.slice(0, 300)}`);
      } catch (err) {
        if (attempt === ATTEMPTS || (err instanceof Error && err.message.startsWith('PUT '))) throw err;
      }
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private path(key: string): string {
    return `/${this.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  private sign(key: string, body: Buffer): Record<string, string> {
    const time = new Date().toISOString().replace(/[-:]|\.\d{3}/g, ''); // 20261126T044500Z
    const date = time.slice(0, 8);
    const payload = createHash('sha256').update(body).digest('hex');
    const canonical = ['PUT', this.path(key), '', `host:${this.host}`, `x-amz-content-sha256:${payload}`, `x-amz-date:${time}`, '', SIGNED_HEADERS, payload].join('\n');
    const scope = `${date}/${this.region}/s3/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', time, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
    const signature = createHmac('sha256', this.keyOf(date)).update(toSign).digest('hex');
    return {
      'x-amz-content-sha256': payload,
      'x-amz-date': time,
      authorization: `AWS4-HMAC-SHA256 Credential=${this.credentials.accessKeyId}/${scope}, SignedHeaders=${SIGNED_HEADERS}, Signature=${signature}`,
    };
  }

  private keyOf(date: string): Buffer {
    if (this.signingKey.date !== date) {
      let key = createHmac('sha256', `AWS4${this.credentials.secretAccessKey}`).update(date).digest();
      for (const part of [this.region, 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
      this.signingKey = { date, key };
    }
    return this.signingKey.key;
  }
}
