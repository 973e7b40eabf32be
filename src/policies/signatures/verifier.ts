/**
 * Which trusted keys signed a manifest, read from both places cosign puts signatures (cosign.ts)
 * and cached by what decides the answer: the manifest's digest, the digest of the manifest its
 * `sha256-<hex>.sig` tag names, and the digests of its signature referrers. Each check reads the
 * tag and the referrers listing (small reads) before the cache, so a signature added or removed
 * on any instance changes the key and is seen by every instance at once; the cache only saves the
 * payload reads and the signature checks. Entries are bounded (LRU).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { ContentSource } from '../../registry/content.js';
import type { Digest } from '../../registry/digest.js';
import { RegistryError } from '../../registry/errors.js';
import { parseObject } from '../../registry/indexing/json-object.js';
import { isCosignTag, payloadNames, PAYLOAD_LIMIT, SIGNATURE_ARTIFACT_TYPE, signatureTag, signedLayers } from './cosign.js';
import { signs, type KeySet } from './keys.js';

/** what the verifier reads: the registry's content (storage, or the pull-through cache) */
export type SignatureReads = Pick<ContentSource, 'manifest' | 'referrers' | 'statBlob' | 'openBlob' | 'tags'>;

/** verification results kept (a digest and a few key names each) */
export const VERIFICATIONS_KEPT = 10_000;
/** signature manifests read for one image at most (each a manifest and its payloads) */
const SIGNATURES_READ = 32;

export class SignatureVerifier {
  private readonly cache: LRUCache<string, readonly string[]>;

  constructor(
    private readonly content: SignatureReads,
    entries = VERIFICATIONS_KEPT,
  ) {
    this.cache = new LRUCache({ max: entries });
  }

  /** the names of the keys in `keys` that signed `digest` in repository `name`; none when unsigned */
  async signers(name: string, digest: Digest, keys: KeySet): Promise<readonly string[]> {
    const [tagged, referred] = await Promise.all([this.taggedSignature(name, digest), this.content.referrers(name, digest, SIGNATURE_ARTIFACT_TYPE)]);
    const referrers = referred.map((d) => d.digest).sort();
    const listing = createHash('sha256').update(referrers.join(',')).digest('hex');
    const cacheKey = `${keys.id}\n${name}\n${digest}\n${tagged?.digest ?? '-'}\n${listing}`;
    const cached = this.cache.get(cacheKey);
    if (cached) return cached;
    const manifests: unknown[] = tagged ? [tagged.json] : [];
    for (const referrer of referrers.slice(0, SIGNATURES_READ)) {
      const found = await missingIsUndefined(this.content.manifest(name, { digest: referrer as Digest }));
      if (found) manifests.push(parseObject(found.content));
    }
    const names = new Set<string>();
    for (const manifest of manifests) {
      for (const layer of signedLayers(manifest)) {
        const payload = await this.payload(name, layer.digest);
        if (!payload || !payloadNames(payload, digest)) continue;
        for (const key of keys.keys) if (signs(key, payload, layer.signature)) names.add(key.name);
      }
    }
    const result = [...names].sort();
    this.cache.set(cacheKey, result);
    return result;
  }

  /** the repository's tags that are not cosign's (`.sig`, `.att`, `.sbom`), at most `limit` */
  async imageTags(name: string, limit: number): Promise<string[]> {
    const tags = (await missingIsUndefined(this.content.tags(name))) ?? [];
    return tags.filter((t) => !isCosignTag(t)).slice(0, limit);
  }

  /** the manifest a reference names, parsed; undefined when it is not there or not JSON */
  async manifestJSON(name: string, reference: { tag: string } | { digest: Digest }): Promise<{ digest: Digest; json: unknown } | undefined> {
    const found = await missingIsUndefined(this.content.manifest(name, reference));
    return found && { digest: found.digest, json: parseObject(found.content) };
  }

  private taggedSignature(name: string, digest: Digest) {
    return this.manifestJSON(name, { tag: signatureTag(digest) });
  }

  /** a payload blob, when it is there and small */
  private async payload(name: string, digest: Digest): Promise<Buffer | undefined> {
    const stat = await missingIsUndefined(this.content.statBlob(name, digest));
    if (!stat || stat.size > PAYLOAD_LIMIT) return undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of await this.content.openBlob(name, digest)) {
      size += (chunk as Buffer).length;
      if (size > PAYLOAD_LIMIT) return undefined;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }
}

/** a read whose target is not there (MANIFEST_UNKNOWN, BLOB_UNKNOWN, NAME_UNKNOWN) gives undefined; other failures stay failures */
async function missingIsUndefined<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof RegistryError && ['MANIFEST_UNKNOWN', 'BLOB_UNKNOWN', 'NAME_UNKNOWN'].includes(err.code)) return undefined;
    throw err;
  }
}
