/**
 * What the soak's clients were told: every manifest and tag whose push was acknowledged (201), with
 * the start of its last acknowledged push, and what the clients deleted. A push cut by a fault
 * (no 201) is not recorded; a delete is recorded when it is sent (whether it happened or not).
 *
 * protectedAt() says whether the registry must still serve a manifest: every acknowledged manifest
 * no client deleted, except what the retention policy of the `ret/**` repositories may remove
 * (cluster.ts RETENTION), modelled exactly as docs/configuration.md states the rules:
 * - a tag stays while it matches keep.tags or its manifest was last pushed (under any tag or by
 *   digest) at most `tagsolderthan` ago;
 * - a manifest stays while it was pushed at most `untaggedolderthan` ago or a staying tag reaches
 *   it (through an index's children and the referrers of a reached manifest).
 * Times are the client's request starts, which the registry's push times can only follow; SLACK_MS
 * covers S3's whole-second modification times.
 */
import { RETENTION } from './cluster.js';

export const SLACK_MS = 2000;

export interface BlobRef {
  digest: string;
  size: number;
  /** PatternBlob seed of a layer; absent: `bytes` hold it (configs) */
  seed?: bigint;
  bytes?: Buffer;
}

export interface ManifestRecord {
  repo: string;
  digest: string;
  mediaType: string;
  body: Buffer;
  /** config and layers */
  blobs: BlobRef[];
  /** an index's manifests */
  children: string[];
  subject?: string;
  /** pushed as the child of an index (never deleted alone: it would break its index) */
  child: boolean;
  owner: number;
  /** the start of the last acknowledged push */
  lastPush: number;
  /** acknowledged, and no delete sent since */
  live: boolean;
  /** bumped by every acknowledged push and every delete sent (a check spanning a change is void) */
  version: number;
}

export interface TagRecord {
  repo: string;
  tag: string;
  digest: string;
  lastPush: number;
  live: boolean;
}

const key = (repo: string, name: string) => `${repo}@${name}`;

export const underPolicy = (repo: string) => repo.startsWith(RETENTION.prefix);

export class Ledger {
  readonly manifests = new Map<string, ManifestRecord>();
  readonly tags = new Map<string, TagRecord>();

  get(repo: string, digest: string): ManifestRecord | undefined {
    return this.manifests.get(key(repo, digest));
  }

  /** a manifest push answered 201 (by digest, or by `tag`) */
  pushed(record: Omit<ManifestRecord, 'live' | 'version' | 'lastPush'>, start: number, tag?: string): ManifestRecord {
    const k = key(record.repo, record.digest);
    const existing = this.manifests.get(k);
    const rec: ManifestRecord = existing ?? { ...record, live: true, version: 0, lastPush: start };
    rec.live = true;
    rec.version++;
    rec.lastPush = Math.max(existing?.live ? existing.lastPush : 0, start);
    this.manifests.set(k, rec);
    if (tag !== undefined) this.tags.set(key(record.repo, tag), { repo: record.repo, tag, digest: record.digest, lastPush: start, live: true });
    return rec;
  }

  /** a DELETE of the manifest is about to be sent: from now on it, and the tags naming it, may be gone */
  deleting(rec: ManifestRecord): void {
    rec.live = false;
    rec.version++;
    for (const tag of this.tags.values()) if (tag.repo === rec.repo && tag.digest === rec.digest) tag.live = false;
  }

  live(): ManifestRecord[] {
    return [...this.manifests.values()].filter((r) => r.live);
  }

  /** whether the tag must still name its manifest at `now` */
  tagProtected(tag: TagRecord, now: number): boolean {
    const rec = this.get(tag.repo, tag.digest);
    if (!tag.live || !rec?.live) return false;
    if (!underPolicy(tag.repo)) return true;
    // a tag's push time is the last push of the manifest it names (by any tag or by digest)
    return RETENTION.keepTag.test(tag.tag) || now - rec.lastPush < RETENTION.tagsOlderThanMs - SLACK_MS;
  }

  /** whether the registry must still serve the manifest at `now` (see the comment at the top) */
  protectedAt(rec: ManifestRecord, now: number): boolean {
    if (!rec.live) return false;
    if (!underPolicy(rec.repo)) return true;
    if (now - rec.lastPush < RETENTION.untaggedOlderThanMs - SLACK_MS) return true;
    return this.reached(rec.repo, now).has(rec.digest);
  }

  /** the live manifests of `repo` that a protected tag reaches */
  private reached(repo: string, now: number): Set<string> {
    const live = [...this.manifests.values()].filter((r) => r.repo === repo && r.live);
    const byDigest = new Map(live.map((r) => [r.digest, r]));
    const reached = new Set<string>();
    const queue = [...this.tags.values()].filter((t) => t.repo === repo && this.tagProtected(t, now)).map((t) => t.digest);
    while (queue.length > 0) {
      const digest = queue.pop()!;
      if (reached.has(digest) || !byDigest.has(digest)) continue;
      reached.add(digest);
      queue.push(...byDigest.get(digest)!.children);
      for (const r of live) if (r.subject === digest) queue.push(r.digest);
    }
    return reached;
  }
}
