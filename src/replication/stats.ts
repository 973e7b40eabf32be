/**
 * What each rule has done and what it is behind: in memory for /debug/vars and Prometheus (a
 * section `replication_<rule>` each, features/debug.ts makes every key a gauge), and the same
 * figures with the last error in storage (state.ts) for `berth replicate status`.
 */

export interface RuleFigures {
  /** pull: runs finished, and those that failed before the end */
  runs: number;
  runFailures: number;
  /** pull: the last run's duration, and when it ended (s since the epoch; 0: none yet) */
  lastRunSeconds: number;
  lastRunEndSeconds: number;
  /** pull: images of the running (or last) run done so far, of those selected */
  imagesDone: number;
  imagesSelected: number;
  manifestsCopied: number;
  blobsCopied: number;
  blobsMounted: number;
  bytesCopied: number;
  /** requests sent to the remote */
  remoteRequests: number;
  /** push: pushes and deletes waiting (what the rule is behind), sent, failed attempts */
  pending: number;
  sent: number;
  sendFailures: number;
  /** when the last error happened (s since the epoch; 0: none since the last success) */
  lastErrorSeconds: number;
}

export function emptyFigures(): RuleFigures {
  return {
    runs: 0,
    runFailures: 0,
    lastRunSeconds: 0,
    lastRunEndSeconds: 0,
    imagesDone: 0,
    imagesSelected: 0,
    manifestsCopied: 0,
    blobsCopied: 0,
    blobsMounted: 0,
    bytesCopied: 0,
    remoteRequests: 0,
    pending: 0,
    sent: 0,
    sendFailures: 0,
    lastErrorSeconds: 0,
  };
}

/** the figures' section name: Prometheus names allow no `-` */
export function figuresSection(rule: string): string {
  return `replication_${rule.replace(/-/g, '_')}`;
}
