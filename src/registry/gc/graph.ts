/**
 * One repository's manifests as a graph, read from storage: which revisions exist, what each one
 * references (children, config and layers, subject) and where the tags point. Only manifests are
 * read, never layer content; a repository's graph is dropped once it is swept, so memory holds
 * the digests of the few repositories in progress (plus the registry-wide mark set).
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import type { Digest } from '../digest.js';
import { listDigests } from '../digest-dirs.js';
import * as layout from '../layout.js';
import { readLink } from '../links.js';
import { readRevisionMeta } from '../revision-meta.js';
import { detectMediaType } from '../manifests/detect.js';
import { MediaTypes, referencesOf } from '../manifests/index.js';
import { forEach } from '../pool.js';

export interface ManifestNode {
  digest: Digest;
  /** an index's or list's children */
  children: string[];
  /** config and layers: the blobs the repository's `_layers` links exist for */
  blobs: string[];
  subject?: string;
  /** berth's own copy of a signed first-generation manifest as pushed (its berth.json says which) */
  signed?: string;
}

export interface RepositoryGraph {
  name: string;
  /** the stored revisions (a revision link that points at its own digest), by digest */
  manifests: Map<string, ManifestNode>;
  /** tag -> the manifest its current link names */
  tags: Map<string, Digest>;
  /** revision directories without a valid link: berth's side files of a manifest that is gone */
  leftovers: string[];
}

/** how many storage reads of one repository are in flight at once */
export const READS = 16;

/**
 * `tags: false`: the tags are left unread (an empty map): a mark that keeps every manifest needs
 * none of them, and their links were a third of the offline collection's small-file reads
 */
export async function readGraph(driver: StorageDriver, name: string, options: { tags: boolean } = { tags: true }): Promise<RepositoryGraph> {
  const graph: RepositoryGraph = { name, manifests: new Map(), tags: new Map(), leftovers: [] };
  const revisions = await listDigests(driver, (algorithm) => layout.manifestRevisionsDir(name, algorithm));
  graph.leftovers.push(...revisions.strays);
  await forEach(revisions.digests, READS, async (digest) => {
    if ((await readLink(driver, layout.manifestRevisionLink(name, digest))) !== digest) {
      graph.leftovers.push(layout.manifestRevisionDir(name, digest));
      return;
    }
    graph.manifests.set(digest, await readNode(driver, name, digest));
  });
  const tags = options.tags ? ((await unlessMissing(driver.listNames(layout.tagsDir(name)))) ?? []) : [];
  await forEach(tags, READS, async (tag) => {
    const digest = await readLink(driver, layout.tagCurrentLink(name, tag));
    if (digest) graph.tags.set(tag, digest);
  });
  graph.leftovers.sort();
  return graph;
}

async function readNode(driver: StorageDriver, name: string, digest: Digest): Promise<ManifestNode> {
  // a revision whose content is missing references nothing that can be known
  const content = await unlessMissing(driver.getContent(layout.blobData(digest)));
  if (!content) return { digest, children: [], blobs: [] };
  const refs = referencesOf(content);
  const node: ManifestNode = {
    digest,
    children: refs.manifests.map((d) => d.digest),
    blobs: [...(refs.config ? [refs.config.digest] : []), ...refs.layers.map((d) => d.digest)],
    ...(refs.subject && { subject: refs.subject.digest }),
  };
  // the stored payload of a signed first-generation manifest has no signatures: the bytes as
  // pushed are a blob of their own, named in berth.json (ManifestStore.put)
  if (detectMediaType(content) === MediaTypes.dockerSchema1) {
    const signed = (await readRevisionMeta(driver, name, digest).catch(unlessMalformed))?.signed;
    if (typeof signed === 'string') node.signed = signed;
  }
  return node;
}

/** a berth.json that is not JSON names nothing (other errors, storage ones, pass) */
function unlessMalformed(err: unknown): undefined {
  if (err instanceof SyntaxError) return undefined;
  throw err;
}
