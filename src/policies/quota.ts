/**
 * Quotas (`policies[].quota`): the bytes and repositories of a scope, every repository the quota's
 * globs match. Every quota whose globs match a repository holds for it (match.ts).
 *
 * Use is what the scope's pushes committed, deduplicated within the scope: each distinct manifest's
 * bytes plus each distinct blob a manifest of the scope references (its stored size), from the
 * metadata index. Blobs uploaded but not (yet) referenced by a manifest do not count, so concurrent
 * pushes are charged when their manifest is PUT, not while their layers upload; a delete gives its
 * manifest's unshared bytes back at once. Which blobs a manifest references is read from its stored
 * content once per digest and kept (content never changes).
 *
 * A manifest PUT is checked and stored under the scope's lock (scope-lock.ts), so of the pushes of
 * all instances into one scope one at a time reads the use and records its own. Blob uploads are
 * refused once the scope is full, from a use at most UPLOAD_USE_MS old. (docs/decisions.md, "Quotas".)
 */
import { LRUCache } from 'lru-cache';
import type { QuotaReads } from '../metadata/quota-reads.js';
import { isDigest, type Digest } from '../registry/digest.js';
import { RegistryError } from '../registry/errors.js';
import * as layout from '../registry/layout.js';
import type { Push } from '../registry/manifest-store.js';
import { referencesOf } from '../registry/manifests/references.js';
import { forEach } from '../registry/pool.js';
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import type { MatchedPolicy, PolicySet } from './match.js';

/** how old the use behind a blob upload's check may be */
export const UPLOAD_USE_MS = 2000;
/** manifests whose references are kept in memory */
const REFERENCE_ENTRIES = 100_000;
/** blob sizes kept in memory (some 150 bytes each) */
const SIZE_ENTRIES = 250_000;
/** manifests read at once when a scope's references are first needed */
const READS = 8;

export interface ScopeUse {
  bytes: number;
  /** repositories of the scope that hold a manifest */
  repositories: number;
}

/** a quota and its use, for the JSON API and the web interface */
export interface QuotaReport {
  policy: string;
  repositories: string[];
  quota: { bytes?: number; repositories?: number };
  use: ScopeUse;
}

/** the scope's contents, as a check needs them */
interface Scope extends ScopeUse {
  names: Set<string>;
  manifests: Set<string>;
  blobs: Set<string>;
}


export class Quotas {
  private readonly references = new LRUCache<string, readonly string[]>({ max: REFERENCE_ENTRIES });
  private readonly sizes = new LRUCache<string, number>({ max: SIZE_ENTRIES });
  private readonly uploadUse = new Map<string, { at: number; scope: Promise<Scope> }>();

  constructor(
    private readonly set: PolicySet,
    private readonly reads: QuotaReads,
    private readonly driver: StorageDriver,
    private readonly locks: { run<T>(scope: string, work: () => Promise<T>): Promise<T> },
    private readonly now: () => number = Date.now,
  ) {}

  /** runs `store` when the push fits every quota of `name`, under each scope's lock (taken in one order: no two pushes wait on each other) */
  admit<T>(name: string, push: Push, store: () => Promise<T>): Promise<T> {
    const policies = [...this.set.quotas(name)].sort((a, b) => (a.source < b.source ? -1 : 1));
    const under = (i: number): Promise<T> => {
      if (i === policies.length) return store();
      const policy = policies[i];
      // the scope by its globs: instances whose lists order the policies differently still share the lock
      return this.locks.run([...policy.options.repositories].sort().join(' '), async () => {
        await this.check(policy, await this.scope(policy), name, push);
        try {
          return await under(i + 1);
        } finally {
          this.uploadUse.delete(policy.source);
        }
      });
    };
    return under(0);
  }

  /** refuses a blob upload to `name` once a quota of it is full (no byte left, or no repository for a new one) */
  async admitUpload(name: string): Promise<void> {
    const policies = this.set.quotas(name);
    // while the index is first built, the manifest PUT refuses (503); an upload alone adds nothing yet
    if (policies.length === 0 || !(await this.reads.isBuilt())) return;
    for (const policy of policies) {
      const scope = await this.recentScope(policy);
      const quota = policy.options.quota!;
      if (quota.bytes !== undefined && scope.bytes >= quota.bytes) {
        throw denied(`${policy.source} is full: ${bytes(scope.bytes)} of ${bytes(quota.bytes)} used; delete images before pushing more`, policy, scope, 0);
      }
      if (quota.repositories !== undefined && !scope.names.has(name) && scope.repositories >= quota.repositories) {
        throw denied(`${policy.source} allows ${quota.repositories} repositories and has ${scope.repositories}: ${name} would be one more`, policy, scope, 0);
      }
    }
  }

  /** every quota, with its use, for which `sees(policy)` holds */
  async report(sees: (policy: MatchedPolicy, names: readonly string[]) => boolean): Promise<QuotaReport[]> {
    const reports: QuotaReport[] = [];
    const all = await this.reads.repositoriesWithManifests();
    for (const policy of this.set.policies.filter((p) => p.options.quota)) {
      if (!sees(policy, all.filter((n) => policy.matches(n)))) continue;
      const { bytes, repositories } = await this.scope(policy, all);
      reports.push({ policy: policy.source, repositories: policy.options.repositories, quota: policy.options.quota!, use: { bytes, repositories } });
    }
    return reports;
  }

  private async check(policy: MatchedPolicy, scope: Scope, name: string, push: Push): Promise<void> {
    const quota = policy.options.quota!;
    const added = await this.added(scope, push);
    if (quota.bytes !== undefined && added.bytes > 0 && scope.bytes + added.bytes > quota.bytes) {
      const message = `the push would take ${policy.source} over its quota: ${bytes(quota.bytes)} allowed, ${bytes(scope.bytes)} used, the manifest ${push.digest} adds ${bytes(added.bytes)}`;
      throw denied(message, policy, scope, added.bytes);
    }
    if (quota.repositories !== undefined && !scope.names.has(name) && scope.repositories + 1 > quota.repositories) {
      const message = `${policy.source} allows ${quota.repositories} repositories and has ${scope.repositories}: ${name} would be one more`;
      throw denied(message, policy, scope, added.bytes);
    }
  }

  /** the bytes the push adds to the scope: its manifest and its blobs, unless the scope holds them already */
  private async added(scope: Scope, push: Push): Promise<{ bytes: number }> {
    let total = scope.manifests.has(push.digest) ? 0 : push.size;
    const fresh = [...new Set(push.blobs)].filter((d) => !scope.blobs.has(d));
    for (const size of (await this.blobSizes(fresh)).values()) total += size;
    return { bytes: total };
  }

  private recentScope(policy: MatchedPolicy): Promise<Scope> {
    const now = this.now();
    const cached = this.uploadUse.get(policy.source);
    if (cached && now - cached.at < UPLOAD_USE_MS) return cached.scope;
    const scope = this.scope(policy);
    this.uploadUse.set(policy.source, { at: now, scope });
    scope.catch(() => this.uploadUse.delete(policy.source));
    return scope;
  }

  private async scope(policy: MatchedPolicy, all?: readonly string[]): Promise<Scope> {
    if (!(await this.reads.isBuilt())) {
      throw new RegistryError('UNAVAILABLE', `the quota of ${policy.source} is counted from the metadata index, which is still being built from storage; try again once it is (berth logs "the metadata index is built")`);
    }
    const names = (all ?? (await this.reads.repositoriesWithManifests())).filter((n) => policy.matches(n));
    const manifests = await this.reads.manifests(names);
    const blobs = new Set<string>();
    const unread: string[] = [];
    for (const digest of manifests.keys()) {
      const known = this.references.get(digest);
      if (known) for (const blob of known) blobs.add(blob);
      else unread.push(digest);
    }
    await forEach(unread, READS, async (digest) => {
      for (const blob of await this.referencesOf(digest)) blobs.add(blob);
    });
    let total = 0;
    for (const size of manifests.values()) total += size;
    for (const size of (await this.blobSizes([...blobs])).values()) total += size;
    return { bytes: total, repositories: names.length, names: new Set(names), manifests: new Set(manifests.keys()), blobs };
  }

  /** stored sizes by digest (a digest's size never changes: kept), from the index for those not kept */
  private async blobSizes(digests: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const unknown: string[] = [];
    for (const digest of digests) {
      const size = this.sizes.get(digest);
      if (size === undefined) unknown.push(digest);
      else out.set(digest, size);
    }
    for (const [digest, size] of await this.reads.blobSizes(unknown)) {
      this.sizes.set(digest, size);
      out.set(digest, size);
    }
    return out;
  }

  /** the blobs (config, layers) a stored manifest references */
  private async referencesOf(digest: string): Promise<readonly string[]> {
    const known = this.references.get(digest);
    if (known) return known;
    const content = isDigest(digest) ? await unlessMissing(this.driver.getContent(layout.blobData(digest as Digest))) : undefined;
    if (!content) return []; // deleted meanwhile
    const refs = referencesOf(content);
    const blobs = [...(refs.config ? [refs.config.digest] : []), ...refs.layers.map((l) => l.digest)].filter((d): d is string => typeof d === 'string');
    this.references.set(digest, blobs);
    return blobs;
  }
}

function denied(message: string, policy: MatchedPolicy, scope: ScopeUse, adds: number): RegistryError {
  return new RegistryError('DENIED', message, {
    detail: { policy: policy.source, quota: policy.options.quota, use: { bytes: scope.bytes, repositories: scope.repositories }, adds: { bytes: adds } },
  });
}

/** bytes for people: 1.5 GiB (and the exact number) */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]} (${n} bytes)`;
}
