/**
 * What an upstream lists as the referrers of a subject: the digests in its referrers API answer,
 * or in the referrers tag schema's index (`<alg>-<hex>`) when it has no such API. Only the digests
 * are taken: the cache fetches each referrer by digest and answers from what it stored (cache.ts),
 * so a descriptor the upstream made up never reaches a client.
 */
import { digestAlgorithm, digestHex, isDigest, type Digest } from '../registry/digest.js';

/** an answer listing more referrers of one subject is refused: each one is a manifest fetch */
export const MAX_REFERRERS = 1000;

/** the referrers tag schema's tag (OCI distribution 1.1): `<alg>-<hex>`, cut to 32 and 64 characters */
export function referrersTag(subject: Digest): string {
  return `${digestAlgorithm(subject).slice(0, 32)}-${digestHex(subject).slice(0, 64)}`;
}

/** the answer does not list referrers as an image index does (its reason; the text is not repeated) */
export class NotAReferrersList extends Error {}

/** the referrer digests an image index lists, in its order, each once */
export function listedReferrers(body: unknown): Digest[] {
  const manifests = (body as { manifests?: unknown } | null)?.manifests;
  if (typeof body !== 'object' || body === null || !Array.isArray(manifests)) throw new NotAReferrersList('it is not an image index');
  const digests = new Set<Digest>();
  for (const entry of manifests as unknown[]) {
    const digest = (entry as { digest?: unknown } | null)?.digest;
    if (typeof digest !== 'string' || !isDigest(digest)) throw new NotAReferrersList('it lists a descriptor without a valid digest');
    digests.add(digest);
  }
  if (digests.size > MAX_REFERRERS) throw new NotAReferrersList(`it lists ${digests.size} referrers, over the cache's limit of ${MAX_REFERRERS}`);
  return [...digests];
}
