/**
 * Manifests of a repository: validated on PUT, stored content-addressed under blobs/ (as
 * Distribution does), made visible by a revision link, named by tags (tags.ts), indexed by subject.
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';
import { LRUCache } from 'lru-cache';
import type { BlobStore } from './blobs.js';
import { DirectoryCache } from './cache/directory-cache.js';
import type { SharedCache } from './cache/shared-cache.js';
import { digestAlgorithm, digestBytes, isDigest, type Digest } from './digest.js';
import { listDigests } from './digest-dirs.js';
import { RegistryError, type ErrorEntry } from './errors.js';
import { KeyedLock } from './keyed-lock.js';
import { linksTo, readLink, writeLink } from './links.js';
import { readRevisionMeta, writeRevisionMeta, type RevisionMeta } from './revision-meta.js';
import { checkRepository, keepRepository } from './repositories.js';
import { mapLimited, REQUEST_IO_CONCURRENCY } from './pool.js';
import type { TagStore } from './tags.js';
import { describeManifest } from './indexing/describe.js';
import type { IndexSink } from './indexing/sink.js';
import { detectMediaType } from './manifests/detect.js';
import { checkLayerURLs, parseManifest, referencesOf, type Descriptor, type LayerURLPolicy, type ParsedManifest } from './manifests/index.js';

/** a tag or a digest, as the URL gave it (already checked) */
export type Reference = { tag: string } | { digest: Digest };

export interface StoredManifest {
  digest: Digest;
  mediaType: string;
  /** the bytes to serve: exactly what was pushed */
  content: Buffer;
}

export interface ManifestStoreOptions {
  /** validation.manifests.urls; undefined when validation is disabled */
  urlPolicy?: LayerURLPolicy;
  /** the pull-through cache stores manifests before their blobs, which it fetches when pulled */
  cachedFromUpstream?: boolean;
  /** the time recorded as the push time in berth.json (default the system clock) */
  now?: () => number;
  /** compatibility.schema1.enabled: false refuses pushes of first-generation manifests */
  schema1?: boolean;
  /** which revisions exist and their records (directory-cache.ts); default: a cache of this store's own */
  revisions?: DirectoryCache;
  /** bytes of manifest content kept by digest (default MANIFEST_CACHE_BYTES; 0: none) */
  contentCacheBytes?: number;
  /** manifest content of every instance (storage.cache.blobdescriptor: redis), behind this process's own */
  shared?: SharedCache;
  /** the metadata index, told of every manifest stored or deleted after storage (indexing/sink.ts) */
  index?: IndexSink;
  /** the policies asked before a push or a delete (src/policies/): tags that never move, quotas */
  guard?: ManifestGuard;
}

/**
 * What the core asks the policies (src/policies/ implements it, features/policies.ts plugs it in):
 * which tags never move, and whether a push fits its quotas. Denials are RegistryErrors the guard
 * builds (and records); the core throws them.
 */
export interface ManifestGuard {
  /** the rule that keeps `tag` of `name` from moving or being deleted (naming the policy and the tag glob); undefined when none does */
  fixedTag(name: string, tag: string): string | undefined;
  /** whether any rule fixes tags of `name` (else a delete need not look at its tags) */
  fixesTags(name: string): boolean;
  /** the denial of a tag move or a delete that `rule` forbids */
  refused(refusal: Refusal): RegistryError;
  /** runs `store` when the push fits every quota of `name`, one push per quota scope at a time; throws the denial when it does not */
  admit<T>(name: string, push: Push, store: () => Promise<T>): Promise<T>;
}

/** a write a tag rule forbids: moving `tag` from one digest to another, or deleting the manifest it names */
export type Refusal = { name: string; tag: string; rule: string } & ({ move: { from: Digest; to: Digest } } | { delete: Digest });

/** what a manifest PUT adds: the manifest and the blobs it references */
export interface Push {
  digest: Digest;
  /** the manifest's own bytes */
  size: number;
  blobs: readonly Digest[];
}

/** default bound of the manifest content kept in memory */
export const MANIFEST_CACHE_BYTES = 8 * 1024 * 1024;

/** how often a PUT writes its revision's berth.json again when a racing DELETE took it */
const META_ATTEMPTS = 3;

export class ManifestStore {
  /** a PUT's writes and a DELETE of the same revision, one after the other within this process */
  private readonly revisions = new KeyedLock();
  private readonly revisionCache: DirectoryCache;
  /**
   * Manifest content by digest: immutable, so kept without a check. It is served only for a
   * revision the repository has (checked through revisionCache on every request).
   */
  private readonly contents?: LRUCache<Digest, Buffer>;

  constructor(
    private readonly driver: StorageDriver,
    private readonly blobs: BlobStore,
    private readonly tags: TagStore,
    private readonly options: ManifestStoreOptions,
  ) {
    this.revisionCache = options.revisions ?? new DirectoryCache(driver);
    const bytes = options.contentCacheBytes ?? MANIFEST_CACHE_BYTES;
    if (bytes > 0) this.contents = new LRUCache({ maxSize: bytes, sizeCalculation: (content) => Math.max(1, content.length) });
  }

  /**
   * validates and stores a pushed manifest; with a tag reference, points the tag at it, and so
   * with each of `tags` (a push by digest with `?tag=` parameters, checked by the caller). `signal`:
   * aborted when the client is gone, which stops the validation; `pushedBy`: the user, for the
   * tags' history in the metadata index
   */
  async put(name: string, reference: Reference, contentType: string | undefined, body: Buffer, signal?: AbortSignal, tags: readonly string[] = [], pushedBy?: string): Promise<ParsedManifest> {
    // stored under the algorithm of a digest reference; a tag names the sha256 digest
    const algorithm = 'digest' in reference ? digestAlgorithm(reference.digest) : 'sha256';
    const manifest = await parseManifest(contentType, body, { schema1: this.options.schema1, signal, algorithm });
    checkAgainstURL(manifest, name, reference);
    if (this.options.urlPolicy) checkLayerURLs(manifest, this.options.urlPolicy);
    if (!this.options.cachedFromUpstream) await this.checkReferences(name, manifest);
    const applied = 'tag' in reference ? [reference.tag, ...tags] : tags;
    const guard = this.options.guard;
    const fixed = new Map<string, string>();
    for (const tag of applied) {
      const rule = guard?.fixedTag(name, tag);
      if (rule) fixed.set(tag, rule);
    }
    // refused before anything is written; checked again under the tag's lock (TagStore.tagOnce)
    for (const [tag, rule] of fixed) {
      const current = await this.tags.resolve(name, tag);
      if (current !== undefined && current !== manifest.digest) throw guard!.refused({ name, tag, rule, move: { from: current, to: manifest.digest } });
    }
    const store = () => this.storeManifest(name, manifest, body, algorithm, applied, fixed, pushedBy);
    const push: Push = { digest: manifest.digest, size: body.length, blobs: manifest.blobs.map((b) => b.digest) };
    await (guard ? guard.admit(name, push, store) : store());
    return manifest;
  }

  /** a validated manifest's writes: content, revision, referrers entry, index, tags (`fixed`: those that never move, with their rule) */
  private storeManifest(name: string, manifest: ParsedManifest, body: Buffer, algorithm: ReturnType<typeof digestAlgorithm>, applied: readonly string[], fixed: ReadonlyMap<string, string>, pushedBy?: string): Promise<void> {
    return this.revisions.run(`${name}@${manifest.digest}`, async () => {
      const pushed = new Date((this.options.now ?? Date.now)()).toISOString();
      const meta: RevisionMeta = { mediaType: manifest.mediaType, pushed };
      // the index's record is read while storage is written: it reads only what this PUT does not
      // write (the configuration, an index's children), so the push does not wait for it after
      const index = this.options.index;
      const described = index && describeManifest(this.driver, { repository: name, digest: manifest.digest, mediaType: meta.mediaType, content: body, pushed });
      described?.catch(() => undefined); // its failure counts where it is awaited, below
      if (manifest.payload !== body) {
        meta.signed = digestBytes(algorithm, body);
        await this.storeContent(meta.signed, body);
      }
      await this.storeContent(manifest.digest, manifest.payload);
      await this.storeRevision(name, manifest.digest, meta);
      if (manifest.subject) await this.indexReferrer(name, manifest, body.length);
      // the tags in storage first; then the manifest with the tags storage has, in one write of the
      // index (also when an immutable tag refused the move: the manifest is stored by then)
      const pointed: string[] = [];
      try {
        for (const tag of applied) {
          const rule = fixed.get(tag);
          const other = rule === undefined ? void (await this.tags.point(name, tag, manifest.digest)) : await this.tags.tagOnce(name, tag, manifest.digest);
          if (other) throw this.options.guard!.refused({ name, tag, rule: rule!, move: { from: other, to: manifest.digest } });
          pointed.push(tag);
        }
      } finally {
        if (index) await index.manifestStored(await described!, pointed, pushedBy);
      }
      await this.keepWritten(name, manifest, applied, meta, body.length, pushedBy);
    });
  }

  /**
   * The PUT's half of the deletion protocol (gc/deleting.ts): once no deleter (retention, online
   * deletion of untagged manifests) works in the repository, what this PUT wrote is read back from
   * storage and written again if one took it meanwhile, so the 201 that follows holds.
   */
  private async keepWritten(name: string, manifest: ParsedManifest, tags: readonly string[], meta: RevisionMeta, size: number, pushedBy?: string): Promise<void> {
    const digest = manifest.digest;
    for (let attempt = 1; await this.blobs.settle(name); attempt++) {
      const [linked, recorded, untagged] = await Promise.all([
        linksTo(this.driver, layout.manifestRevisionLink(name, digest), digest),
        readRevisionMeta(this.driver, name, digest).catch(() => undefined),
        // only a tag that is gone was taken: one naming another digest was pushed since, by someone else
        Promise.all(tags.map(async (tag) => ((await readLink(this.driver, layout.tagCurrentLink(name, tag))) === undefined ? [tag] : []))).then((gone) => gone.flat()),
      ]);
      if (linked && recorded && untagged.length === 0) return;
      if (attempt > META_ATTEMPTS) throw new Error(`revision ${digest} in ${name} keeps being deleted while it is pushed`);
      await this.storeRevision(name, digest, meta);
      if (manifest.subject) await this.indexReferrer(name, manifest, size);
      for (const tag of untagged) await this.tags.tag(name, tag, digest, pushedBy);
    }
  }

  /**
   * berth.json, then the revision link. A DELETE on another instance may remove the revision's
   * directory in between; the link must then not stay without its berth.json: once the link is
   * written, the record is read back and written again until both are there.
   */
  private async storeRevision(name: string, digest: Digest, meta: RevisionMeta): Promise<void> {
    await writeRevisionMeta(this.driver, name, digest, meta);
    await writeLink(this.driver, layout.manifestRevisionLink(name, digest), digest);
    for (let attempt = 1; (await readRevisionMeta(this.driver, name, digest)) === undefined; attempt++) {
      if (attempt > META_ATTEMPTS) throw new Error(`the record of revision ${digest} in ${name} keeps disappearing (a DELETE racing this PUT on another instance?)`);
      await writeRevisionMeta(this.driver, name, digest, meta);
      await writeLink(this.driver, layout.manifestRevisionLink(name, digest), digest);
    }
  }

  async get(name: string, reference: Reference): Promise<StoredManifest> {
    const digest = 'tag' in reference ? await this.tags.resolve(name, reference.tag) : reference.digest;
    const revision = digest && (await this.revision(name, digest));
    if (!digest || !revision) throw await this.unknown(name, reference);
    const content = await this.readContent(revision.meta?.signed ?? digest, name, reference);
    return { digest, mediaType: revision.meta?.mediaType ?? detectMediaType(content), content };
  }

  /** the revision's record (undefined without berth.json) when `name` has the revision; undefined when it has not */
  private revision(name: string, digest: Digest): Promise<{ meta?: RevisionMeta } | undefined> {
    return this.revisionCache.read(layout.manifestRevisionDir(name, digest), 'revision', undefined, async () => {
      // both files at once: one round trip instead of two where every read is one (S3)
      const meta = readRevisionMeta(this.driver, name, digest);
      meta.catch(() => undefined); // a failure counts only if the link is there
      return (await linksTo(this.driver, layout.manifestRevisionLink(name, digest), digest)) ? { meta: await meta } : undefined;
    });
  }

  /**
   * removes every tag that points at it, the revision, and its referrers entry, in that order: a
   * delete cut anywhere leaves no tag naming a missing manifest, at worst an untagged manifest that
   * the client's retried DELETE removes; the repository stays, with no manifest left in it (see
   * repositories.ts)
   */
  delete(name: string, digest: Digest): Promise<void> {
    return this.revisions.run(`${name}@${digest}`, async () => {
      const manifest = await this.get(name, { digest });
      const guard = this.options.guard;
      for (const tag of guard?.fixesTags(name) ? await this.tags.naming(name, digest) : []) {
        const rule = guard!.fixedTag(name, tag);
        if (rule) throw guard!.refused({ name, tag, rule, delete: digest });
      }
      const subject = referencesOf(manifest.content).subject?.digest;
      await keepRepository(this.driver, name);
      await this.tags.untagAll(name, digest);
      // gone meanwhile: another instance's DELETE did the same
      await unlessMissing(this.driver.delete(layout.manifestRevisionDir(name, digest)));
      if (subject && isDigest(subject)) await unlessMissing(this.driver.delete(layout.referrerDir(name, subject, digest)));
      await this.options.index?.manifestRemoved(name, digest);
    });
  }

  /**
   * descriptors of the manifests whose subject is `subject`, optionally of one artifactType; none
   * in a repository that does not exist (OCI: a referrers request is never answered 404)
   */
  async referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]> {
    const { digests } = await listDigests(this.driver, (algorithm) => layout.referrerEntriesDir(name, subject, algorithm));
    const descriptors = await mapLimited(digests, REQUEST_IO_CONCURRENCY, async (digest) => {
      const content = await unlessMissing(this.driver.getContent(layout.referrerDescriptor(name, subject, digest))); // deleted meanwhile
      const descriptor = content && (JSON.parse(content.toString()) as Descriptor);
      // a revision deleted by Distribution on a shared root leaves berth's index entry behind
      return descriptor && (await this.hasRevision(name, descriptor.digest)) ? descriptor : undefined;
    });
    return descriptors.filter((d): d is Descriptor => d !== undefined && (artifactType === undefined || d.artifactType === artifactType));
  }

  hasRevision(name: string, digest: Digest): Promise<boolean> {
    return this.revisionCache.read(layout.manifestRevisionDir(name, digest), 'link', false, () => linksTo(this.driver, layout.manifestRevisionLink(name, digest), digest));
  }

  /**
   * every blob must be linked in the repository and stored, every child manifest stored in it
   * (4.4); the references, and the manifest itself (a revision online collection may be deleting
   * as untagged), are recorded as used first (online garbage collection's protocol)
   */
  private async checkReferences(name: string, manifest: ParsedManifest): Promise<void> {
    // blobs are unique already (parseManifest); an index may list one child many times
    const children = [...new Set(manifest.manifests.map((m) => m.digest))];
    await this.blobs.touch([manifest.digest, ...manifest.blobs.map((b) => b.digest), ...children]);
    const [blobsLinked, childrenStored] = await Promise.all([
      mapLimited(manifest.blobs, REQUEST_IO_CONCURRENCY / 2, async (b) => (await this.blobs.isLinked(name, b.digest)) && (await this.blobs.storedSize(b.digest)) !== undefined),
      mapLimited(children, REQUEST_IO_CONCURRENCY / 2, (digest) => this.hasRevision(name, digest)),
    ]);
    const errors: ErrorEntry[] = [
      ...manifest.blobs
        .filter((_, i) => !blobsLinked[i])
        .map((b): ErrorEntry => ({ code: 'BLOB_UNKNOWN', message: `blob unknown to registry: ${b.digest} is referenced by the manifest but not uploaded to ${name}`, detail: { digest: b.digest } })),
      ...children
        .filter((_, i) => !childrenStored[i])
        .map((digest): ErrorEntry => ({ code: 'MANIFEST_UNKNOWN', message: `manifest unknown: ${digest} is referenced by the index but not pushed to ${name}`, detail: { digest } })),
    ];
    if (errors.length > 0) throw MissingReferences.of(errors);
  }

  private async storeContent(digest: Digest, content: Buffer): Promise<void> {
    if ((await this.blobs.storedSize(digest)) === content.length) return;
    await this.driver.putContent(layout.blobData(digest), content);
  }

  private async indexReferrer(name: string, manifest: ParsedManifest, size: number): Promise<void> {
    const descriptor: Descriptor = { mediaType: manifest.mediaType, digest: manifest.digest, size };
    if (manifest.artifactType) descriptor.artifactType = manifest.artifactType;
    if (manifest.annotations) descriptor.annotations = manifest.annotations;
    await this.driver.putContent(layout.referrerDescriptor(name, manifest.subject!.digest, manifest.digest), Buffer.from(JSON.stringify(descriptor)));
  }

  private async readContent(digest: Digest, name: string, reference: Reference): Promise<Buffer> {
    const cached = this.contents?.get(digest) ?? (await this.sharedContent(digest));
    if (cached) {
      this.contents?.set(digest, cached);
      return cached;
    }
    const content = await unlessMissing(this.driver.getContent(layout.blobData(digest)));
    if (!content) throw await this.unknown(name, reference);
    this.contents?.set(digest, content);
    this.options.shared?.set(`manifest:${digest}`, content);
    return content;
  }

  /** content from the shared cache, if it is what `digest` names (anything else there is ignored) */
  private async sharedContent(digest: Digest): Promise<Buffer | undefined> {
    const content = await this.options.shared?.get(`manifest:${digest}`);
    return content && digestBytes(digestAlgorithm(digest), content) === digest ? content : undefined;
  }

  /** MANIFEST_UNKNOWN, or NAME_UNKNOWN when the repository itself does not exist */
  private async unknown(name: string, reference: Reference): Promise<RegistryError> {
    await checkRepository(this.driver, name);
    const what = 'tag' in reference ? `tag ${JSON.stringify(reference.tag)}` : reference.digest;
    return new RegistryError('MANIFEST_UNKNOWN', `manifest unknown: ${what} is not in ${name}`, { detail: 'tag' in reference ? { tag: reference.tag } : { digest: reference.digest } });
  }
}

/** the body must describe what the URL names (2.3): digest references, and first generation's name and tag */
function checkAgainstURL(manifest: ParsedManifest, name: string, reference: Reference): void {
  if ('digest' in reference && reference.digest !== manifest.digest) {
    throw new RegistryError('DIGEST_INVALID', `the manifest's digest ${manifest.digest} does not match the reference ${reference.digest}`, { detail: { digest: reference.digest } });
  }
  if (manifest.name !== undefined && manifest.name !== name) {
    throw new RegistryError('NAME_INVALID', `the manifest's name ${JSON.stringify(manifest.name)} does not match the repository ${JSON.stringify(name)}`, { detail: { name: manifest.name } });
  }
  if (manifest.tag !== undefined && 'tag' in reference && manifest.tag !== reference.tag) {
    throw new RegistryError('TAG_INVALID', `the manifest's tag ${JSON.stringify(manifest.tag)} does not match the tag ${JSON.stringify(reference.tag)} in the URL`, { detail: { tag: manifest.tag } });
  }
}

/** a manifest names blobs or manifests its repository does not hold: one error entry each */
export class MissingReferences extends RegistryError {
  static of(entries: ErrorEntry[]): MissingReferences {
    const [first, ...more] = entries;
    return new MissingReferences(first.code, first.message, { detail: first.detail, more });
  }
}
