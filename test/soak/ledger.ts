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
 *
 * Once unprotected, a manifest may be gone for good (`lapsed`): a later tag that reaches it again (a
 * keep-* tag on its subject or index) does not bring it back. Only an acknowledged push of the
 * manifest itself, or of an index naming it (the registry checks an index's children before its
 * 201), says it is there again. Between two pushes protection only shrinks, so a manifest
 * unprotected at some moment is unprotected when the next push starts: that is where it is looked at.
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
  /** unprotected at some moment since its last acknowledged push: retention may have deleted it */
  lapsed?: boolean;
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
    if (underPolicy(record.repo)) this.lapse(record.repo, start);
    const k = key(record.repo, record.digest);
    const existing = this.manifests.get(k);
    const rec: ManifestRecord = existing ?? { ...record, live: true, version: 0, lastPush: start };
    rec.live = true;
    rec.version++;
    rec.lastPush = Math.max(existing?.live ? existing.lastPush : 0, start);
    rec.lapsed = false;
    this.manifests.set(k, rec);
    // the registry found the children there (a child gone answers 400 MANIFEST_UNKNOWN) and recorded their use
    for (const child of rec.children) {
      const c = this.get(record.repo, child);
      if (c?.live) c.lapsed = false;
    }
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
    if (rec.lapsed) return false;
    // a tag's push time is the last push of the manifest it names (by any tag or by digest)
    return RETENTION.keepTag.test(tag.tag) || now - rec.lastPush < RETENTION.tagsOlderThanMs - SLACK_MS;
  }

  /** whether the registry must still serve the manifest at `now` (see the comment at the top) */
  protectedAt(rec: ManifestRecord, now: number): boolean {
    if (!rec.live) return false;
    if (!underPolicy(rec.repo)) return true;
    if (rec.lapsed) return false;
    if (now - rec.lastPush < RETENTION.untaggedOlderThanMs - SLACK_MS) return true;
    return this.reached(rec.repo, now).has(rec.digest);
  }

  /** for a LOST report: why the ledger holds `rec` protected at `now` (the rule, or the tag and path reaching it) */
  protection(rec: ManifestRecord, now: number): string {
    if (!underPolicy(rec.repo)) return 'not under the policy';
    if (now - rec.lastPush < RETENTION.untaggedOlderThanMs - SLACK_MS) return `pushed ${((now - rec.lastPush) / 1000).toFixed(1)} s ago`;
    const path = this.reached(rec.repo, now).get(rec.digest);
    return path === undefined ? 'not protected' : `reached from ${path}`;
  }

  /** marks lapsed the live manifests of `repo` unprotected at `now` (before a push that may protect them again) */
  private lapse(repo: string, now: number): void {
    const reached = this.reached(repo, now);
    for (const rec of this.manifests.values()) {
      if (rec.repo !== repo || !rec.live || rec.lapsed) continue;
      if (!(now - rec.lastPush < RETENTION.untaggedOlderThanMs - SLACK_MS) && !reached.has(rec.digest)) rec.lapsed = true;
    }
  }

  /** the live manifests of `repo` that a protected tag reaches, each with the path from the tag */
  private reached(repo: string, now: number): Map<string, string> {
    const live = [...this.manifests.values()].filter((r) => r.repo === repo && r.live);
    const byDigest = new Map(live.map((r) => [r.digest, r]));
    const referrers = new Map<string, string[]>();
    for (const r of live) if (r.subject !== undefined) referrers.set(r.subject, [...(referrers.get(r.subject) ?? []), r.digest]);
    const reached = new Map<string, string>();
    const queue: [string, string][] = [...this.tags.values()].filter((t) => t.repo === repo && this.tagProtected(t, now)).map((t) => [t.digest, `tag ${t.tag}`]);
    while (queue.length > 0) {
      const [digest, path] = queue.pop()!;
      if (reached.has(digest) || !byDigest.has(digest)) continue;
      reached.set(digest, path);
      const short = digest.slice(7, 19);
      queue.push(...byDigest.get(digest)!.children.map((c): [string, string] => [c, `${path} > child of ${short}`]));
      queue.push(...(referrers.get(digest) ?? []).map((r): [string, string] => [r, `${path} > referrer of ${short}`]));
    }
    return reached;
  }
}
