/**
 * The pull-through cache stores a manifest before the blobs it references (a client fetches them
 * next), so the manifest's record is written without its image configuration: no platform, no
 * labels. This remembers such manifests and, once the cache has stored the configuration, tells
 * the index the manifest again, described from storage (idempotent). Bounded: a manifest whose
 * configuration is never pulled is forgotten, and the reconciler's full pass describes it.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { isDigest, type Digest } from '../digest.js';
import * as layout from '../layout.js';
import { referencesOf } from '../manifests/index.js';
import { readManifest } from './facts.js';
import type { IndexSink } from './sink.js';

/** manifests remembered at most (the oldest forgotten first) */
const REMEMBERED = 1_000;

export class LateConfigs {
  /** `<repository>\n<config digest>` -> the digests of the manifests waiting for it */
  private readonly waiting = new Map<string, Digest[]>();

  constructor(
    private readonly driver: StorageDriver,
    private readonly index: IndexSink,
  ) {}

  /** the cache stored this manifest (and told the index) */
  async manifestFilled(name: string, digest: Digest, content: Buffer): Promise<void> {
    const config = referencesOf(content).config?.digest;
    if (!config || !isDigest(config)) return;
    if (await unlessMissing(this.driver.stat(layout.blobData(config)))) return; // described with it already
    const key = `${name}\n${config}`;
    const digests = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    this.waiting.set(key, digests.includes(digest) ? digests : [...digests, digest]);
    if (this.waiting.size > REMEMBERED) this.waiting.delete(this.waiting.keys().next().value!);
  }

  /** the cache stored this blob in `name` */
  async blobFilled(name: string, digest: Digest): Promise<void> {
    const key = `${name}\n${digest}`;
    const manifests = this.waiting.get(key);
    if (!manifests) return;
    this.waiting.delete(key);
    for (const manifest of manifests) {
      const record = await readManifest(this.driver, name, manifest);
      if (record) await this.index.manifestStored(record);
    }
  }
}
