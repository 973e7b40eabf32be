/**
 * What the policies read from the configuration (`policies:`), as the room's own types: the
 * composition root passes the validated list. Bytes are numbers of bytes.
 */
export interface PolicyOptions {
  repositories: string[];
  /** tag globs (`v*`, `!v*-rc*`): a tag that matches one and no `!` glob never moves and is never deleted */
  immutabletags?: string[];
  quota?: { bytes?: number; repositories?: number };
  signatures?: { require: boolean; cosign: { keys: string[] } };
}
