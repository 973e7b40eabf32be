/**
 * `berth verify` (zot calls it scrub): reads a storage root and reports damage.
 *
 * - Blobs: every blob's bytes hash to its name in its algorithm (all of blobs/, or with a
 *   repository only the blobs it links).
 * - Repositories: every `_layers` link names a stored blob; every revision's content is stored,
 *   parses as a manifest and its blobs and children exist in the repository; every tag names a
 *   revision of the repository.
 *
 * With `fix`, only what is provably broken is moved aside, under `_berth/verify/quarantine/` at
 * the same relative path (never deleted): a blob's data whose bytes do not match its name, and
 * link files (layer, revision, tag) that name something that is not there. Files, not
 * directories, move: S3 has no directories to move. A manifest whose blobs are missing is reported, not moved: the
 * manifest itself is sound, and pushing the blobs again repairs it.
 *
 * Leftovers are not damage: states berth leaves on purpose and documents (docs/decisions.md,
 * "`berth verify`"), reported as such. A `_layers` link whose blob is not stored and that no
 * manifest of the repository uses is one: an upload links before it moves the blob (killed
 * between the two, the link stays), and online garbage collection moves unused blobs to its
 * trash and leaves the links. With `fix` such a link is deleted, unless it is younger than
 * LEFTOVER_AGE_MS (an upload may be between its link and its move) or its blob is in the
 * collector's trash (a request may still take it back through the link).
 */
import { createHash } from 'node:crypto';
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { digestAlgorithm, isDigest, type Algorithm, type Digest } from '../digest.js';
import { forEachStoredBlob, listDigests } from '../digest-dirs.js';
import { readGraph } from '../gc/graph.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import * as layout from '../layout.js';
import { readLink } from '../links.js';
import { parseManifest } from '../manifests/index.js';
import { readRevisionMeta } from '../revision-meta.js';

export interface VerifyOptions {
  /** only this repository (and the blobs it links) */
  repository?: string;
  fix: boolean;
  /** one line per finding */
  report: (line: string) => void;
  /** blobs hashed so far, of how many (for a progress line) */
  progress?: (done: number, total: number) => void;
  /** the clock a leftover's age is measured on (tests) */
  now?: () => number;
}

export interface VerifySummary {
  repositories: number;
  manifests: number;
  blobs: number;
  bytes: number;
  /** findings: damage found */
  damaged: number;
  /** of which moved aside (with fix) */
  movedAside: number;
  /** leftovers found: states berth leaves on purpose, not damage */
  leftovers: number;
  /** of which deleted (with fix) */
  removed: number;
}

const QUARANTINE = `${layout.BERTH_STATE}/verify/quarantine`;
/** blobs hashed at once (each a streamed read) */
const HASHING = 4;
/** a leftover link younger than this stays with `fix`: an upload may be between its link and its move */
export const LEFTOVER_AGE_MS = 60 * 60 * 1000;

export async function verify(driver: StorageDriver, options: VerifyOptions): Promise<VerifySummary> {
  const summary: VerifySummary = { repositories: 0, manifests: 0, blobs: 0, bytes: 0, damaged: 0, movedAside: 0, leftovers: 0, removed: 0 };
  const now = options.now ?? Date.now;
  const damage = async (line: string, broken?: string) => {
    summary.damaged++;
    if (!options.fix || broken === undefined) return options.report(`damaged: ${line}`);
    await driver.move(broken, `${QUARANTINE}${broken.slice(layout.ROOT.length)}`);
    summary.movedAside++;
    options.report(`damaged: ${line}; moved aside`);
  };

  /**
   * a layer link whose blob is not stored: damage when a manifest uses it (never moved aside while
   * the collector has the blob in its trash: a request through the link takes it back); otherwise
   * a leftover, deleted with fix when that cannot take anything from anyone
   */
  const missingLayer = async (name: string, digest: Digest, used: boolean) => {
    const link = layout.layerLink(name, digest);
    const trashed = (await unlessMissing(driver.stat(layout.gcTrashData(digest)))) !== undefined;
    if (used) return damage(`${name}: layer link ${digest} names a blob that is not stored${trashed ? ' (it is in the collector\'s trash)' : ''}`, trashed ? undefined : link);
    summary.leftovers++;
    const line = trashed
      ? `leftover: ${name}: layer link ${digest}, used by no manifest: online garbage collection moved its blob to the trash and leaves links`
      : `leftover: ${name}: layer link ${digest}, used by no manifest, names a blob that is not stored: an upload links before it moves the blob, or garbage collection left it`;
    if (!options.fix) return options.report(line);
    if (trashed) return options.report(`${line}; kept while the blob is in the trash`);
    const info = await unlessMissing(driver.stat(link));
    if (info && now() - info.modTime.getTime() < LEFTOVER_AGE_MS) return options.report(`${line}; kept: younger than an hour, an upload may still be moving the blob`);
    await unlessMissing(driver.delete(layout.layerLinkDir(name, digest)));
    summary.removed++;
    options.report(`${line}; removed`);
  };

  const blobs = options.repository ? await linkedBlobs(driver, options.repository) : await allBlobs(driver);
  let done = 0;
  await forEach(blobs, HASHING, async (digest) => {
    const path = layout.blobData(digest);
    const actual = await hashOf(driver, path, digestAlgorithm(digest));
    options.progress?.(++done, blobs.length);
    if (actual === undefined) return; // a linked blob that is missing: the repository check says so
    summary.blobs++;
    summary.bytes += actual.size;
    if (actual.digest !== digest) await damage(`blob ${digest}: its bytes hash to ${actual.digest}`, path);
  });

  const names = options.repository ? [options.repository] : await collect(repositoryNames(driver));
  for (const name of names) {
    summary.repositories++;
    const stored = async (digest: string) => isDigest(digest) && (await unlessMissing(driver.stat(layout.blobData(digest)))) !== undefined;
    const graph = await readGraph(driver, name);
    const used = new Set([...graph.manifests.values()].flatMap((node) => node.blobs));
    for (const digest of (await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm))).digests) {
      // a directory without its link file (left by a move aside) links nothing
      if ((await readLink(driver, layout.layerLink(name, digest))) === undefined || (await stored(digest))) continue;
      await missingLayer(name, digest, used.has(digest));
    }
    for (const node of graph.manifests.values()) {
      const { digest } = node;
      summary.manifests++;
      const meta = await readRevisionMeta(driver, name, digest).catch(() => undefined);
      const content = await unlessMissing(driver.getContent(layout.blobData(digest)));
      if (!content) {
        await damage(`${name}: manifest ${digest} has no content under blobs/`, layout.manifestRevisionLink(name, digest));
        continue;
      }
      const parsed = await parseManifest(meta?.mediaType, content).catch((err: unknown) => (err as Error).message);
      if (typeof parsed === 'string') {
        await damage(`${name}: manifest ${digest} does not parse: ${parsed}`);
        continue;
      }
      for (const blob of node.blobs) {
        const linked = isDigest(blob) && (await readLink(driver, layout.layerLink(name, blob))) === blob;
        if (!linked || !(await stored(blob))) await damage(`${name}: manifest ${digest} references blob ${blob}, which is ${linked ? 'not stored' : 'not linked into the repository'}`);
      }
      for (const child of node.children) {
        if (!graph.manifests.has(child)) await damage(`${name}: manifest ${digest} references manifest ${child}, which is not in the repository`);
      }
    }
    for (const [tag, digest] of graph.tags) {
      if (!graph.manifests.has(digest)) await damage(`${name}: tag ${tag} names manifest ${digest}, which is not in the repository`, layout.tagCurrentLink(name, tag));
    }
  }
  return summary;
}

/** the summary as one line */
export function verifyLine(summary: VerifySummary): string {
  const damage = summary.damaged === 0 ? 'no damage found' : `${summary.damaged} damaged${summary.movedAside ? `, ${summary.movedAside} moved aside to ${QUARANTINE}` : ''}`;
  const leftovers = summary.leftovers === 0 ? '' : `; ${summary.leftovers} leftovers (not damage)${summary.removed ? `, ${summary.removed} removed` : ''}`;
  const state = damage + leftovers;
  return `verify: ${summary.repositories} repositories, ${summary.manifests} manifests, ${summary.blobs} blobs (${summary.bytes} bytes) checked: ${state}`;
}

/** the digest (in `algorithm`) and size of what is stored at `path`, hashed as it is read; undefined when missing */
async function hashOf(driver: StorageDriver, path: string, algorithm: Algorithm): Promise<{ digest: string; size: number } | undefined> {
  const stream = await unlessMissing(driver.reader(path, 0));
  if (!stream) return undefined;
  const hash = createHash(algorithm);
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { digest: `${algorithm}:${hash.digest('hex')}`, size };
}

async function allBlobs(driver: StorageDriver): Promise<Digest[]> {
  const out: Digest[] = [];
  await forEachStoredBlob(driver, () => false, 1, async (digest) => {
    out.push(digest);
  });
  return out;
}

/** the blobs a repository links: layers and its manifests' own content, of every algorithm */
async function linkedBlobs(driver: StorageDriver, name: string): Promise<Digest[]> {
  const layers = await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm));
  const revisions = await listDigests(driver, (algorithm) => layout.manifestRevisionsDir(name, algorithm));
  return [...new Set([...layers.digests, ...revisions.digests])];
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
