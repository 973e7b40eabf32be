/**
 * `berth verify --index`: every difference between the index and storage, one line each, in
 * repository order. Compared: the repositories, each manifest's record except its push time (a
 * revision written before berth recorded push times has none in storage; the image's size and
 * build time are compared: they are read from storage as the rebuild reads them), which digest each tag
 * names, and the blob links with their sizes. Times and the tags' history are the index's own
 * and not compared. A tag directory without a current link (a push that died between the tag's
 * `index` link and its `current` one) is reported too: storage's tag list names it, the index
 * cannot (it names no manifest), so the two listings differ until the tag is pushed again or its
 * directory removed; a rebuild does not repair it.
 */
import type { StorageDriver } from '../../storage/driver.js';
import type { MetadataIndex } from '../../metadata/metadata-index.js';
import type { ManifestRecord, RepositoryFacts } from '../../metadata/records.js';
import { repositoryNames } from '../gc/repositories.js';
import { readRepositoryFacts, type StoredRepository } from './facts.js';

export async function verifyIndex(driver: StorageDriver, index: MetadataIndex, report: (line: string) => void): Promise<number> {
  let differences = 0;
  const say = (line: string) => {
    differences++;
    report(line);
  };
  const indexed = new Set(await index.repositoryNames());
  for await (const name of repositoryNames(driver)) {
    const stored = await readRepositoryFacts(driver, name);
    const rows = await index.readRepository(name);
    indexed.delete(name);
    if (!rows) {
      say(`${name}: in storage, not in the index`);
      continue;
    }
    compareRepository(stored, rows, say);
    // the reconciler compares too (compareRepository) but cannot write these: reported here only
    const indexedTags = new Set(rows.tags.map((t) => t.name));
    for (const tag of stored.tagsWithoutLink) {
      if (!indexedTags.has(tag)) say(`${name}:${tag}: tag directory in storage without a current link, not in the index (storage's tag list names it; push the tag again or remove its directory)`);
    }
  }
  for (const name of indexed) say(`${name}: in the index, not in storage`);
  return differences;
}

/** every difference between one repository in storage and its rows, one line each (the reconciler writes only a repository that has some) */
export function compareRepository(stored: StoredRepository, rows: RepositoryFacts & { hasManifests: boolean }, say: (line: string) => void): void {
  const name = stored.name;
  if (rows.hasManifests !== stored.hasManifests) say(`${name}: ${stored.hasManifests ? 'has' : 'has no'} _manifests in storage, the index says the opposite`);
  const manifests = new Map(rows.manifests.map((m) => [m.digest, m]));
  for (const m of stored.manifests) {
    const row = manifests.get(m.digest);
    manifests.delete(m.digest);
    if (!row) say(`${name}@${m.digest}: manifest in storage, not in the index`);
    else for (const field of differingFields(m, row)) say(`${name}@${m.digest}: ${field} is ${JSON.stringify(m[field])} in storage, ${JSON.stringify(row[field])} in the index`);
  }
  for (const digest of manifests.keys()) say(`${name}@${digest}: manifest in the index, not in storage`);

  const tags = new Map(rows.tags.map((t) => [t.name, t.digest]));
  for (const t of stored.tags) {
    const digest = tags.get(t.name);
    tags.delete(t.name);
    if (digest === undefined) say(`${name}:${t.name}: tag in storage (${t.digest}), not in the index`);
    else if (digest !== t.digest) say(`${name}:${t.name}: names ${t.digest} in storage, ${digest} in the index`);
  }
  for (const [tag, digest] of tags) say(`${name}:${tag}: tag in the index (${digest}), not in storage`);

  const blobs = new Map(rows.blobs.map((b) => [b.digest, b.size]));
  for (const b of stored.blobs) {
    const size = blobs.get(b.digest);
    blobs.delete(b.digest);
    if (size === undefined) say(`${name}: blob ${b.digest} linked in storage, not in the index`);
    else if (size !== b.size) say(`${name}: blob ${b.digest} is ${b.size} bytes in storage, ${size} in the index`);
  }
  for (const digest of blobs.keys()) say(`${name}: blob ${digest} linked in the index, not in storage`);
}

const COMPARED = ['mediaType', 'size', 'configDigest', 'platforms', 'labels', 'annotations', 'subject', 'imageSize', 'created'] as const;

function differingFields(a: ManifestRecord, b: ManifestRecord): (typeof COMPARED)[number][] {
  return COMPARED.filter((field) => JSON.stringify(a[field]) !== JSON.stringify(b[field]));
}
