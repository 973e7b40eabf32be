/**
 * Pulls an acknowledged manifest by digest and every blob it names (config and layers), hashing
 * each; a manifest or blob the registry says is unknown while the ledger says it must be served
 * (Ledger.protectedAt, judged when the answer came) is lost. Answers that faults explain (5xx, cut
 * requests) leave the check inconclusive; a check during which the record changed (a push or a
 * delete by its owner) is void.
 */
import { createHash } from 'node:crypto';
import type { Ledger, ManifestRecord, TagRecord } from './ledger.js';
import { CutError, type Reply, type Wire } from './wire.js';
import { ACCEPT_MANIFESTS } from '../helpers/images.js';

export type Verdict = 'ok' | 'removed' | 'inconclusive' | 'lost';

export interface Loss {
  repo: string;
  digest: string;
  tag?: string;
  /** what was missing or wrong */
  what: string;
  /** ms since the last acknowledged push */
  age: number;
  at: string;
  servedBy?: string;
}


const errorCode = (reply: Reply) => /"code"\s*:\s*"([A-Z_]+)"/.exec(reply.body.toString('utf8', 0, 500))?.[1] ?? '';

export class Checker {
  readonly losses = new Map<string, Loss>();
  checks = 0;
  /** live manifests (repo@digest) and tags (repo:tag) found gone that the retention policy may have removed */
  readonly removed = new Set<string>();

  constructor(
    private readonly wire: Wire,
    private readonly ledger: Ledger,
    /** a kill in flight during the span, if any (FaultInjector.killDuring) */
    private readonly killDuring: (span: { start: number; end: number }) => unknown = () => undefined,
  ) {}

  async check(rec: ManifestRecord): Promise<Verdict> {
    const version = rec.version;
    this.checks++;
    const missing = async (what: string, reply: Reply): Promise<Verdict> => {
      if (rec.version !== version) return 'inconclusive';
      if (!this.ledger.protectedAt(rec, reply.end)) {
        this.removed.add(`${rec.repo}@${rec.digest}`);
        return 'removed';
      }
      this.lost(rec, `${what} (${this.ledger.protection(rec, reply.end)})`, reply);
      return 'lost';
    };
    try {
      const manifest = await this.wire.send('GET', `/v2/${rec.repo}/manifests/${rec.digest}`, { headers: { accept: ACCEPT_MANIFESTS } });
      if (manifest.status === 404) return await missing(`manifest: 404 ${errorCode(manifest)}`, manifest);
      if (manifest.status !== 200) return 'inconclusive';
      if (!manifest.body.equals(rec.body)) return await missing(`manifest: 200 with other content (${manifest.body.length} bytes)`, manifest);
      for (const blob of rec.blobs) {
        const got = await this.wire.send('GET', `/v2/${rec.repo}/blobs/${blob.digest}`);
        if (got.status === 404) return await missing(`blob ${blob.digest}: 404 ${errorCode(got)}`, got);
        if (got.status !== 200) return 'inconclusive';
        const digest = `sha256:${createHash('sha256').update(got.body).digest('hex')}`;
        if (digest !== blob.digest || got.body.length !== blob.size) return await missing(`blob ${blob.digest}: 200 with ${got.body.length} bytes hashing to ${digest}`, got);
      }
      return 'ok';
    } catch (err) {
      if (err instanceof CutError) return 'inconclusive';
      throw err;
    }
  }

  /**
   * A DELETE of `rec` (outside the policy) answered 404: lost, unless an instance or a worker was
   * killed while it was in flight; HAProxy's retry-on then sent it again after the killed one had
   * carried it out, and the second instance found the manifest gone.
   */
  deleteNotFound(rec: ManifestRecord, reply: Reply): 'retried' | 'lost' {
    if (this.killDuring(reply)) return 'retried';
    this.lost(rec, 'DELETE of the manifest: 404', reply);
    return 'lost';
  }

  /** records `rec` as lost (once), with what showed it */
  lost(rec: ManifestRecord, what: string, reply: Reply): void {
    const k = `${rec.repo}@${rec.digest}`;
    if (this.losses.has(k)) return;
    this.losses.set(k, { repo: rec.repo, digest: rec.digest, what, age: reply.end - rec.lastPush, at: new Date(reply.end).toISOString(), servedBy: reply.servedBy });
  }

  /** the tag still names its last acknowledged manifest (when the ledger says it must) */
  async checkTag(tag: TagRecord): Promise<Verdict> {
    const rec = this.ledger.get(tag.repo, tag.digest);
    const version = rec?.version;
    try {
      const reply = await this.wire.send('HEAD', `/v2/${tag.repo}/manifests/${tag.tag}`, { headers: { accept: ACCEPT_MANIFESTS } });
      if (reply.status >= 500) return 'inconclusive';
      const digest = reply.headers.get('docker-content-digest');
      if (reply.status === 200 && digest === tag.digest) return 'ok';
      if (rec?.version !== version || !this.ledger.tagProtected(tag, reply.end)) {
        this.removed.add(`${tag.repo}:${tag.tag}`);
        return 'removed';
      }
      const k = `${tag.repo}:${tag.tag}`;
      if (!this.losses.has(k)) {
        const what = reply.status === 200 ? `tag names ${digest}` : `tag: ${reply.status}`;
        this.losses.set(k, { repo: tag.repo, digest: tag.digest, tag: tag.tag, what, age: reply.end - tag.lastPush, at: new Date(reply.end).toISOString(), servedBy: reply.servedBy });
      }
      return 'lost';
    } catch (err) {
      if (err instanceof CutError) return 'inconclusive';
      throw err;
    }
  }
}
