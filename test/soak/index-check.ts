/**
 * The soak's reading of `berth verify --index`: each difference between the index and the bucket,
 * with what explains it. Until the reconciler of issue 28 is in, the writers outside the request
 * path do not tell the index: the retention policy (anything in its repositories) and the online
 * collection (a layer link whose blob it collected: storage's facts leave out a link to a blob
 * that is not stored, which `berth verify` reports as a leftover, while the index keeps the row).
 * A kill between a request's storage write and its index write leaves the index behind storage:
 * explained when a write to that repository was in flight during a kill. Any other difference is
 * a fault of the index's writes.
 */
import type { Exchange } from './wire.js';

export interface IndexDifferences {
  retention: number;
  collected: number;
  killed: number;
  unexplained: string[];
}

export interface IndexContext {
  /** the output of `berth verify` (its `leftover:` lines) */
  verifyOutput: string;
  /** the requests that write (method other than GET and HEAD), with their times */
  writes: Exchange[];
  /** the kill, if any, that was in flight during an exchange */
  killDuring: (exchange: { start: number; end: number }) => unknown;
  /** the retention policy's repositories (a prefix) */
  retentionPrefix: string;
}

/** `team/app: ...`, `team/app@sha256:...: ...`, `team/app:tag: ...`: names hold neither ':' nor '@' */
const REPOSITORY = /^([^:@\s]+)[:@]/;
const INDEX_ONLY_LINK = /^([^:@\s]+): blob (\S+) linked in the index, not in storage$/;
const LEFTOVER_LINK = /^leftover: ([^:@\s]+): layer link (\S+),/;

export function explainIndexDifferences(differences: string[], context: IndexContext): IndexDifferences {
  const leftovers = new Set(context.verifyOutput.split('\n').flatMap((line) => {
    const m = LEFTOVER_LINK.exec(line);
    return m ? [`${m[1]} ${m[2]}`] : [];
  }));
  const killedRepositories = new Set(
    context.writes.filter((w) => context.killDuring(w) !== undefined).map((w) => /^\/v2\/(.+?)\/(?:manifests|blobs|tags)\//.exec(w.path)?.[1]),
  );
  const out: IndexDifferences = { retention: 0, collected: 0, killed: 0, unexplained: [] };
  for (const line of differences) {
    const repository = REPOSITORY.exec(line)?.[1];
    const link = INDEX_ONLY_LINK.exec(line);
    if (repository?.startsWith(context.retentionPrefix)) out.retention++;
    else if (link && leftovers.has(`${link[1]} ${link[2]}`)) out.collected++;
    else if (repository !== undefined && killedRepositories.has(repository)) out.killed++;
    else out.unexplained.push(line);
  }
  return out;
}
