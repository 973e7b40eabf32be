/**
 * Every storage path berth uses, in one place. The layout is CNCF Distribution's, so a directory
 * or bucket written by Distribution is served by berth and the other way round.
 */
import { digestAlgorithm, digestHex, type Algorithm, type Digest } from './digest.js';

export const ROOT = '/docker/registry/v2';
export const REPOSITORIES = `${ROOT}/repositories`;

const hexOf = (digest: Digest) => digestHex(digest);
const algorithmOf = (digest: Digest) => digestAlgorithm(digest);

/** berth's registry-wide state, beside Distribution's directories (which Distribution ignores) */
export const BERTH_STATE = `${ROOT}/_berth`;

/** the secret that signs upload URLs when http.secret is not configured (src/http/secret.ts) */
export const UPLOAD_SECRET = `${BERTH_STATE}/upload-secret`;

/** online garbage collection's state (src/registry/gc/online.ts) */
export const GC_STATE = `${BERTH_STATE}/gc`;
/** written when a collection starts its mark: its modification time is the collection's start on the store's clock */
export const GC_MARK_STARTED = `${GC_STATE}/mark-started`;
/**
 * a blob's last use (told to exist, mounted, committed, referenced by a manifest): its modification
 * time. Named by hex alone, as the trash below: a hex's length names its algorithm (digestOfHex).
 */
export function gcTouch(digest: Digest): string {
  return `${GC_STATE}/touched/${hexOf(digest)}`;
}
/**
 * where a deleter (retention, online deletion of untagged manifests) marks a repository while it
 * deletes one of its tags or revisions (gc/deleting.ts); `_markers` cannot be a repository component
 */
export function gcDeletingMarkers(name: string): string {
  return `${GC_STATE}/deleting/${name}/_markers`;
}
export const GC_TRASH = `${GC_STATE}/trash`;
/** where a collection moves a blob's data before it is deleted for good, so a late user can take it back */
export function gcTrashData(digest: Digest): string {
  return `${GC_TRASH}/${hexOf(digest)}/data`;
}
export function gcTrashDir(digest: Digest): string {
  return `${GC_TRASH}/${hexOf(digest)}`;
}

/**
 * every blob, one directory per algorithm (as Distribution names them), each in 256 directories
 * named by the first 2 hex of their digests
 */
export const BLOBS = `${ROOT}/blobs`;

/** the blobs of one algorithm: blobs/<algorithm> */
export function blobsDir(algorithm: Algorithm): string {
  return `${BLOBS}/${algorithm}`;
}

/** one of blobsDir's directories: the blobs whose hex starts with `prefix` */
export function blobPrefixDir(algorithm: Algorithm, prefix: string): string {
  return `${blobsDir(algorithm)}/${prefix}`;
}

/** the directory of one blob's content: blobs/<algorithm>/<first 2 hex>/<hex> */
export function blobDir(digest: Digest): string {
  const hex = hexOf(digest);
  return `${blobPrefixDir(algorithmOf(digest), hex.slice(0, 2))}/${hex}`;
}

export function blobData(digest: Digest): string {
  return `${blobDir(digest)}/data`;
}

export function repository(name: string): string {
  return `${REPOSITORIES}/${name}`;
}

/** a repository's link to a layer (or config) blob: its existence grants the repository access */
export function layerLink(name: string, digest: Digest): string {
  return `${layerLinkDir(name, digest)}/link`;
}

/** a repository's layer links of one algorithm, one directory per digest hex */
export function layersDir(name: string, algorithm: Algorithm): string {
  return `${repository(name)}/_layers/${algorithm}`;
}

export function layerLinkDir(name: string, digest: Digest): string {
  return `${layersDir(name, algorithmOf(digest))}/${hexOf(digest)}`;
}

/** the directory whose presence makes a repository (for the catalog, tags and manifests), as in Distribution 3 */
export const MANIFESTS_DIR_NAME = '_manifests';

export function manifestsDir(name: string): string {
  return `${repository(name)}/${MANIFESTS_DIR_NAME}`;
}

/**
 * berth's mark that keeps a repository whose manifests were all deleted (repositories.ts): object
 * stores and the in-memory driver have no empty directories. Distribution ignores it.
 */
export function repositoryKeep(name: string): string {
  return `${manifestsDir(name)}/berth.keep`;
}

/** a repository's manifest revisions of one algorithm, one directory per digest hex */
export function manifestRevisionsDir(name: string, algorithm: Algorithm): string {
  return `${manifestsDir(name)}/revisions/${algorithm}`;
}

export function manifestRevisionLink(name: string, digest: Digest): string {
  return `${manifestRevisionDir(name, digest)}/link`;
}

export function manifestRevisionDir(name: string, digest: Digest): string {
  return `${manifestRevisionsDir(name, algorithmOf(digest))}/${hexOf(digest)}`;
}

export function tagsDir(name: string): string {
  return `${manifestsDir(name)}/tags`;
}

export function tagDir(name: string, tag: string): string {
  return `${tagsDir(name)}/${tag}`;
}

export function tagCurrentDir(name: string, tag: string): string {
  return `${tagDir(name, tag)}/current`;
}

export function tagCurrentLink(name: string, tag: string): string {
  return `${tagCurrentDir(name, tag)}/link`;
}

/** a tag's index of one algorithm: one directory per manifest the tag has named */
export function tagIndexDir(name: string, tag: string, algorithm: Algorithm): string {
  return `${tagDir(name, tag)}/index/${algorithm}`;
}

export function tagIndexEntryDir(name: string, tag: string, digest: Digest): string {
  return `${tagIndexDir(name, tag, algorithmOf(digest))}/${hexOf(digest)}`;
}

export function tagIndexLink(name: string, tag: string, digest: Digest): string {
  return `${tagIndexEntryDir(name, tag, digest)}/link`;
}

export function uploadsDir(name: string): string {
  return `${repository(name)}/_uploads`;
}

export function uploadDir(name: string, uuid: string): string {
  return `${uploadsDir(name)}/${uuid}`;
}

export function uploadData(name: string, uuid: string): string {
  return `${uploadDir(name, uuid)}/data`;
}

export function uploadStartedAt(name: string, uuid: string): string {
  return `${uploadDir(name, uuid)}/startedat`;
}

/**
 * berth's own record beside a manifest revision: the media type it was pushed with and, for signed
 * first-generation manifests, the digest of the signed bytes as pushed. Distribution ignores it;
 * revisions without it (written by Distribution) are served with the type read from the content.
 */
export function manifestRevisionMeta(name: string, digest: Digest): string {
  return `${manifestRevisionDir(name, digest)}/berth.json`;
}

/**
 * berth's record of the last pull of a manifest revision (activity.ts): the time as an ISO string,
 * written at most once per interval. Distribution ignores it; it goes with the revision directory.
 */
export function manifestRevisionPulled(name: string, digest: Digest): string {
  return `${manifestRevisionDir(name, digest)}/berth.pulled`;
}

/** berth's state of a maintenance pass shared by every instance on the storage, and which instance runs it (shared-schedule.ts) */
export function scheduleState(task: string): string {
  return `${BERTH_STATE}/schedule/${task}.json`;
}

/** replication (src/replication/): a rule's state (last run, last error) */
export function replicationState(rule: string): string {
  return `${BERTH_STATE}/replication/${rule}/state.json`;
}

/** replication: a push rule's queue of pushes and deletes still to send, one file each, in name order */
export function replicationQueue(rule: string): string {
  return `${BERTH_STATE}/replication/${rule}/queue`;
}

/**
 * berth's referrers index (OCI 1.1): one directory per subject that has referrers, by the
 * subject's algorithm: referrers/<subject algorithm>/<subject hex>/<referrer algorithm>/<referrer hex>
 */
export function referrerSubjectsDir(name: string, algorithm: Algorithm): string {
  return `${manifestsDir(name)}/referrers/${algorithm}`;
}

/** one subject's referrers: one descriptor file per manifest whose `subject` is `subject` */
export function referrersDir(name: string, subject: Digest): string {
  return `${referrerSubjectsDir(name, algorithmOf(subject))}/${hexOf(subject)}`;
}

/** the directories of `subject`'s referrers of one algorithm, one per referrer digest hex */
export function referrerEntriesDir(name: string, subject: Digest, algorithm: Algorithm): string {
  return `${referrersDir(name, subject)}/${algorithm}`;
}

export function referrerDir(name: string, subject: Digest, digest: Digest): string {
  return `${referrerEntriesDir(name, subject, algorithmOf(digest))}/${hexOf(digest)}`;
}

export function referrerDescriptor(name: string, subject: Digest, digest: Digest): string {
  return `${referrerDir(name, subject, digest)}/descriptor`;
}
