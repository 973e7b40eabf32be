/**
 * The "signed by <key>" / "not signed" marks of the web interface: where a signatures policy
 * applies (policies[].signatures, src/policies/signatures/), each tag row and manifest carries the
 * names of the trusted keys that signed it (`signedBy`, empty: not signed). Elsewhere, and on
 * cosign's own `.sig`/`.att`/`.sbom` tags, no mark.
 * The verification is the pull gate's (cached by signature state), so a page costs a tag read and
 * a referrers listing per row after the first.
 */
import { isCosignTag } from '../policies/signatures/cosign.js';
import type { PullGate } from '../policies/signatures/gate.js';
import { parseDigest } from '../registry/digest.js';
import { mapLimited } from '../registry/pool.js';
import type { TagPage } from './wire.js';

const CONCURRENCY = 8;

/** the page with each readable row marked (a row whose signatures cannot be read stays unmarked) */
export async function markSigned(page: TagPage, gate: PullGate | undefined): Promise<TagPage> {
  if (!gate) return page;
  const tags = await mapLimited(page.tags, CONCURRENCY, async (row) => {
    // cosign's own .sig/.att/.sbom tags are what signs, not images to be signed
    if ('error' in row || isCosignTag(row.tag)) return row;
    const signers = await signedBy(gate, page.name, row.digest);
    return signers === undefined ? row : { ...row, signedBy: signers };
  });
  return { ...page, tags };
}

/** the keys that signed `digest`; undefined where no policy applies or the signatures cannot be read */
export async function signedBy(gate: PullGate | undefined, name: string, digest: string): Promise<string[] | undefined> {
  if (!gate) return undefined;
  try {
    const names = await gate.signedBy(name, parseDigest(digest));
    return names && [...names];
  } catch {
    return undefined;
  }
}
