/**
 * A big repository's replacement split into parts (rebuild.ts), so that no single transaction
 * holds the database (and, on SQLite, this process's event loop) for long: a repository of
 * 100,000 tags written whole took seconds. Each part replaces one key range of one kind of row
 * (metadata-index.ts, Replacement.part): manifests first (a tag's size is read from its
 * manifest's row), then tags, then `_layers` links. The ranges of a kind cover every key, so
 * rows the index has and storage does not are removed by the part whose range holds them.
 */
import type { KeyRange, Replacement, RowKind } from '../../metadata/metadata-index.js';
import type { RepositoryFacts } from '../../metadata/records.js';

/** the parts of `facts`, each with at most `rows` records, in the order they are to be written */
export function splitRepository(facts: RepositoryFacts, hasManifests: boolean, expectChanges: number, rows: number): Replacement[] {
  const parts: Replacement[] = [];
  const kinds: [RowKind, string[]][] = [
    ['manifests', facts.manifests.map((m) => m.digest)],
    ['tags', facts.tags.map((t) => t.name)],
    ['blobs', facts.blobs.map((b) => b.digest)],
  ];
  for (const [kind, keys] of kinds) {
    // records are sorted by key (facts.ts), in the database's byte order for these ASCII keys
    const slices = Math.max(1, Math.ceil(keys.length / rows));
    for (let i = 0; i < slices; i++) {
      const range: KeyRange = { from: i === 0 ? undefined : keys[i * rows], to: i === slices - 1 ? undefined : keys[(i + 1) * rows] };
      const part: RepositoryFacts = { name: facts.name, manifests: [], tags: [], blobs: [] };
      (part[kind] as unknown[]) = facts[kind].slice(i * rows, (i + 1) * rows);
      parts.push({ facts: part, hasManifests, expectChanges, part: { [kind]: range } });
    }
  }
  return parts;
}
