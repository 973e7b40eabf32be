/**
 * The mark of one repository: which of its manifests are kept and which digests they keep.
 *
 * Kept: every manifest, or with `deleteUntagged` those reachable from a tag. Reachable means, from
 * each kept manifest: its children (an index's or list's manifests, tagged or not; Distribution
 * 2.8 deletes untagged children of a tagged index, distribution/distribution#3178) and its
 * referrers (the manifests whose `subject` it is: signatures, SBOMs). A referrer does not keep its
 * subject.
 *
 * Marked (registry-wide, for the blob sweep): each kept manifest's own digest, its signed copy, its
 * children, config and layers, whether or not this repository stores them.
 */
import type { Digest } from '../digest.js';
import type { RepositoryGraph } from './graph.js';

export interface RepositoryMark {
  /** the manifests kept, by digest */
  kept: Set<string>;
  /** the stored manifests not kept (only with deleteUntagged), sorted */
  unkept: Digest[];
  /** config and layer digests of the kept manifests: the `_layers` links the repository still needs */
  used: Set<string>;
}

/** `alsoKept`: untagged manifests kept all the same (online collection spares young ones) */
export function markRepository(graph: RepositoryGraph, deleteUntagged: boolean, marked: Set<string>, report: (line: string) => void, alsoKept: readonly Digest[] = []): RepositoryMark {
  const referrers = new Map<string, Digest[]>();
  for (const node of graph.manifests.values()) {
    if (node.subject === undefined) continue;
    referrers.set(node.subject, [...(referrers.get(node.subject) ?? []), node.digest]);
  }
  const roots = deleteUntagged ? [...graph.tags.values(), ...alsoKept] : [...graph.manifests.keys()];
  const kept = new Set<string>();
  const used = new Set<string>();
  const pending = roots.filter((digest) => graph.manifests.has(digest)).sort();
  const markDigest = (digest: string, what: string) => {
    if (marked.has(digest)) return;
    marked.add(digest);
    report(`${graph.name}: marking ${what} ${digest}`);
  };
  for (let digest = pending.pop(); digest !== undefined; digest = pending.pop()) {
    if (kept.has(digest)) continue;
    const node = graph.manifests.get(digest)!;
    kept.add(digest);
    markDigest(digest, 'manifest');
    if (node.signed) markDigest(node.signed, 'blob');
    for (const child of node.children) {
      markDigest(child, 'manifest');
      if (graph.manifests.has(child)) pending.push(child as Digest);
    }
    for (const blob of node.blobs) {
      used.add(blob);
      markDigest(blob, 'blob');
    }
    pending.push(...(referrers.get(digest) ?? []));
  }
  const unkept = [...graph.manifests.keys()].filter((digest) => !kept.has(digest)).sort() as Digest[];
  return { kept, unkept, used };
}
