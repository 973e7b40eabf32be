/**
 * A repository's fingerprint: a hash of what storage says about its directories without reading
 * a file. The reconciler (reconcile.ts) reads a repository whole only when its fingerprint differs
 * from the one the index keeps from the last whole read (metadata/storage-versions.ts); the
 * rebuild (rebuild.ts) keeps the fingerprint of each repository it reads, so the reconciler's
 * first pass after it skips what did not change. One owner, so both keep the same thing.
 *
 * Taken BEFORE the repository is read: a write landing after it changes the fingerprint, so the
 * next pass reads the repository again (a fingerprint taken after the read could hide that write).
 */
import { createHash, type Hash } from 'node:crypto';
import type { StorageVersions } from '../../metadata/storage-versions.js';
import { PathNotFoundError, unlessMissing, type DirectoryFacts, type DirectoryQuery, type StorageDriver } from '../../storage/driver.js';
import { ALGORITHMS, isDigest } from '../digest.js';
import { READS } from '../gc/graph.js';
import * as layout from '../layout.js';
import { mapLimited } from '../pool.js';
import { storedSize, type TagLinkTime } from './facts.js';

/**
 * a file changed less than this long ago (by the store's clock) leaves the fingerprint unsettled:
 * it is not kept, so the next pass reads the repository again. Timestamps can be coarse (S3's
 * are whole seconds; a filesystem's a few ms), and a rewrite of a link in place keeps its size.
 */
export const SETTLE_MS = 2_000;
/**
 * `_layers` links without content a repository's kept fingerprint remembers (after a space each),
 * so a pass checks whether their content arrived (a stat each): beyond them, the full pass sees it
 */
export const UNSTORED_KEPT = 32;

export interface Fingerprint {
  version: string;
  /** nothing in it changed within SETTLE_MS: safe to keep and compare with later */
  settled: boolean;
}

/**
 * On a driver that vouches for directories (the filesystem's childrenVersion: device, inode and
 * mtime), the tokens of the directories whose children a write adds or removes (the repository's,
 * the revisions', the `_layers` links', the tags'), and each tag's current link's size and time (a
 * tag moved by Distribution is rewritten in place). Otherwise (S3, or a directory changed too
 * recently to be vouched for) a walk of `_manifests` and `_layers` with every file's size and
 * time, as the listings carry them (on S3 one LIST per directory, no object read).
 * `storeNow`: the store's time (the filesystem's is this machine's, Date.now).
 */
export async function fingerprint(driver: StorageDriver, name: string, storeNow: () => number): Promise<Fingerprint> {
  return (await fingerprints(driver, [name], storeNow, 1))[0];
}

/**
 * the fingerprint taken again after the repository was read, the way `before` was taken: a walk
 * (directories too freshly changed to be vouched for) is compared with a walk, since once they
 * settle the directory tokens give another version with no write in between, and the read would
 * be left to the next pass for nothing (the more likely the longer the read: a batch's
 * fingerprints are all taken before its first repository is read)
 */
export async function fingerprintAgain(driver: StorageDriver, name: string, before: Fingerprint, storeNow: () => number): Promise<Fingerprint> {
  return before.version.startsWith('w:') ? byWalk(driver, name, storeNow() - SETTLE_MS) : fingerprint(driver, name, storeNow);
}

/**
 * fingerprint() of many repositories, in order (the reconciler's batch). On a driver with
 * inspectDirectories (the filesystem), all of them in one call: one message to its worker threads
 * instead of about ten fs calls per repository through libuv's pool, which a request's own fs
 * calls would queue behind (docs/performance.md, "The reconciler's pass at scale"). Otherwise, or
 * for a repository whose directories cannot be vouched for, one by one, `concurrency` at once.
 */
export async function fingerprints(driver: StorageDriver, names: readonly string[], storeNow: () => number, concurrency: number): Promise<Fingerprint[]> {
  if (!driver.inspectDirectories) return mapLimited(names, concurrency, (name) => fingerprintByCalls(driver, name, storeNow));
  const horizon = storeNow() - SETTLE_MS;
  const facts = await driver.inspectDirectories(names.flatMap((name) => tokenQueries(name, true)));
  const each = names.map((name, i) => ({ name, facts: facts.slice(i * TOKEN_QUERIES, (i + 1) * TOKEN_QUERIES) }));
  return mapLimited(each, concurrency, async ({ name, facts: [repository, layers, revisions, tags, ...algorithms] }) => {
    const tokens = tokensOf(name, repository, layers, revisions, tags, algorithms);
    if (!tokens) return byWalk(driver, name, storeNow() - SETTLE_MS);
    const tagNames = (tags.exists && tags.names) || [];
    return finished(tokens, horizon, tagNames.map((tag, j) => ({ tag, size: tags.below?.[j]?.size, modTimeMs: tags.below?.[j]?.modTimeMs })));
  });
}

/** fingerprint() by the driver's single calls (drivers without inspectDirectories) */
async function fingerprintByCalls(driver: StorageDriver, name: string, storeNow: () => number): Promise<Fingerprint> {
  const finish = await beginFingerprint(driver, name, storeNow);
  if (!finish) return byWalk(driver, name, storeNow() - SETTLE_MS);
  const tags = (await unlessMissing(driver.listNames(layout.tagsDir(name)))) ?? [];
  const links = await mapLimited(tags, READS, (tag) => unlessMissing(driver.stat(layout.tagCurrentLink(name, tag))));
  return finish(tags.map((tag, i) => ({ tag, size: links[i]?.size, modTimeMs: links[i]?.modTime.getTime() })));
}

/**
 * The fingerprint's first half, taken before the repository is read: the directory tokens. The
 * finisher wants every tag's current link with its size and time, in the tags directory's listing
 * order; the rebuild passes those its read of the tags found (a link's content and time read
 * together, so a tag rewritten after that read changes the fingerprint), which spares a second
 * stat of every tag. undefined: the driver cannot vouch for the directories (S3), and the
 * fingerprint is the walk, which the rebuild leaves to the reconciler (on S3 a LIST per
 * directory: more requests than the rebuild's own read of the repository).
 */
export async function beginFingerprint(driver: StorageDriver, name: string, storeNow: () => number): Promise<((tags: readonly TagLinkTime[]) => Fingerprint) | undefined> {
  const horizon = storeNow() - SETTLE_MS;
  let tokens: Hash | undefined;
  if (driver.inspectDirectories) {
    const [repository, layers, revisions, tags, ...algorithms] = await driver.inspectDirectories(tokenQueries(name, false));
    tokens = tokensOf(name, repository, layers, revisions, tags, algorithms);
  } else tokens = await directoryTokens(driver, name);
  if (!tokens) return undefined;
  return (tags) => finished(tokens, horizon, tags);
}

/** the fingerprint of the directory tokens and the tags' current links */
function finished(tokens: Hash, horizon: number, tags: readonly TagLinkTime[]): Fingerprint {
  const fp = { hash: tokens, settled: true };
  for (const t of tags) addFile(fp, t.tag, t.size, t.modTimeMs, horizon);
  return { version: `t:${fp.hash.digest('hex')}`, settled: fp.settled };
}

/**
 * keeps the fingerprint taken before the repository was read whole, with the `_layers` links whose
 * content was missing at that read (`unstoredLinks`); an unsettled one is forgotten (read again)
 */
export async function keepFingerprint(versions: StorageVersions, name: string, before: Fingerprint, unstoredLinks: readonly string[]): Promise<void> {
  const version = keptVersion(before, unstoredLinks);
  if (version !== undefined) await versions.set(name, version);
  else await versions.forget(name);
}

/** what storage-versions.ts keeps for the repository; undefined: nothing (unsettled, read it again) */
export function keptVersion(before: Fingerprint, unstoredLinks: readonly string[]): string | undefined {
  return before.settled ? [before.version, ...unstoredLinks.slice(0, UNSTORED_KEPT)].join(' ') : undefined;
}

/**
 * is the kept fingerprint still the repository's? A link whose content was missing at the last
 * read counts once another push stored the content, which leaves the repository's directories as
 * they were: its content is looked for (a stat each)
 */
export async function stillKept(driver: StorageDriver, kept: string | undefined, now: Fingerprint): Promise<boolean> {
  const [version, ...unstored] = kept?.split(' ') ?? [];
  return now.settled && now.version === version && !(await anyStored(driver, unstored));
}

/** has any of these blobs' content been stored since? */
async function anyStored(driver: StorageDriver, digests: string[]): Promise<boolean> {
  for (const digest of digests) if (isDigest(digest) && (await storedSize(driver, digest)) !== undefined) return true;
  return false;
}

/** a tag's current link below its directory in the tags directory (`current/link`), as layout.ts has it */
const TAG_LINK = layout.tagCurrentLink('r', 't').slice(`${layout.tagsDir('r')}/t/`.length);

/** inspectDirectories queries per repository (tokenQueries), in this order: the repository, `_layers`, the revisions, the tags, then per algorithm its `_layers` and revisions directory */
const TOKEN_QUERIES = 4 + 2 * ALGORITHMS.length;

/** what tokensOf needs of a repository's directories; `withTags`: the tags' names and current links too */
function tokenQueries(name: string, withTags: boolean): DirectoryQuery[] {
  const repository = layout.repository(name);
  return [
    { path: repository, version: true },
    { path: `${repository}/_layers`, names: true },
    { path: `${layout.manifestsDir(name)}/revisions`, names: true },
    withTags ? { path: layout.tagsDir(name), version: true, names: true, below: TAG_LINK } : { path: layout.tagsDir(name), version: true },
    ...ALGORITHMS.map((algorithm) => ({ path: layout.layersDir(name, algorithm), version: true })),
    ...ALGORITHMS.map((algorithm) => ({ path: layout.manifestRevisionsDir(name, algorithm), version: true })),
  ];
}

/** directoryTokens' hash from tokenQueries' answers: the same value, so fingerprints kept by either compare equal */
function tokensOf(name: string, repository: DirectoryFacts, layers: DirectoryFacts, revisions: DirectoryFacts, tags: DirectoryFacts, algorithms: DirectoryFacts[]): Hash | undefined {
  if (!repository.exists || repository.version === undefined) return undefined;
  const layerNames = (layers.exists && layers.names) || [];
  const revisionNames = (revisions.exists && revisions.names) || [];
  const hash = createHash('sha256').update('tokens\n');
  hash.update(`${layerNames.join('/')}\n${revisionNames.join('/')}\n`);
  const dirs: [string, DirectoryFacts][] = [
    [layout.repository(name), repository],
    [layout.tagsDir(name), tags],
    ...ALGORITHMS.flatMap((a, i): [string, DirectoryFacts][] => (layerNames.includes(a) ? [[layout.layersDir(name, a), algorithms[i]]] : [])),
    ...ALGORITHMS.flatMap((a, i): [string, DirectoryFacts][] => (revisionNames.includes(a) ? [[layout.manifestRevisionsDir(name, a), algorithms[ALGORITHMS.length + i]]] : [])),
  ];
  for (const [dir, facts] of dirs) {
    if (facts.exists && facts.version === undefined) return undefined; // cannot vouch for it now
    hash.update(`${dir}\0${facts.exists ? facts.version : '-'}\n`);
  }
  return hash;
}

/** the hash of the directories' tokens (without the tags' links); undefined: the driver cannot vouch for one of them */
async function directoryTokens(driver: StorageDriver, name: string): Promise<Hash | undefined> {
  const repository = layout.repository(name);
  const hash = createHash('sha256').update('tokens\n');
  // a driver that never vouches (S3) answers without a request: ask it before listing anything
  if ((await unlessMissing(driver.childrenVersion(repository))) === undefined) return undefined;
  // the algorithms' directories that exist (a listing of their parents, whose names go in the hash)
  const [layers, revisions] = await Promise.all(
    [`${repository}/_layers`, `${layout.manifestsDir(name)}/revisions`].map(async (parent) => ({ parent, names: (await unlessMissing(driver.listNames(parent))) ?? [] })),
  );
  const dirs = [
    repository,
    layout.tagsDir(name),
    ...ALGORITHMS.filter((a) => layers.names.includes(a)).map((algorithm) => layout.layersDir(name, algorithm)),
    ...ALGORITHMS.filter((a) => revisions.names.includes(a)).map((algorithm) => layout.manifestRevisionsDir(name, algorithm)),
  ];
  hash.update(`${layers.names.join('/')}\n${revisions.names.join('/')}\n`);
  for (const dir of dirs) {
    let token: string | undefined;
    try {
      token = await driver.childrenVersion(dir);
    } catch (err) {
      if (!(err instanceof PathNotFoundError)) throw err;
      token = '-';
    }
    if (token === undefined) return undefined; // cannot vouch for it (now, or ever)
    hash.update(`${dir}\0${token}\n`);
  }
  return hash;
}

async function byWalk(driver: StorageDriver, name: string, horizon: number): Promise<Fingerprint> {
  const base = layout.repository(name);
  const fp = { hash: createHash('sha256').update('walk\n'), settled: true };
  await unlessMissing(
    driver.walk(base, (info) => {
      const relative = info.path.slice(base.length + 1);
      const top = relative.split('/', 1)[0];
      // the repository's own content only: not `_uploads`, not the repositories nested in it
      if (top !== layout.MANIFESTS_DIR_NAME && top !== '_layers') return info.isDir ? 'skip' : undefined;
      if (!info.isDir) addFile(fp, relative, info.size, info.modTime.getTime(), horizon);
    }),
  );
  return { version: `w:${fp.hash.digest('hex')}`, settled: fp.settled };
}

/** the files are visited in a fixed order (walk's, or one tag at a time by name) */
function addFile(fp: { hash: Hash; settled: boolean }, path: string, size: number | undefined, modTime: number | undefined, horizon: number): void {
  if (modTime !== undefined && modTime > horizon) fp.settled = false;
  fp.hash.update(`${path}\0${size ?? '-'}\0${modTime ?? '-'}\n`);
}
