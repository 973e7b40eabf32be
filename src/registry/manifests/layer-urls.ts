/**
 * The policy on layer URLs (Distribution's `validation.manifests.urls.allow` / `.deny`): a URL
 * must be http(s) without a fragment, match one `allow` pattern when any are given, and match no
 * `deny` pattern. Patterns are unanchored, as Go's MatchString is. With neither list set, no URL
 * is allowed, which is Distribution's default.
 */
import { manifestInvalid } from './fields.js';
import type { ManifestContent } from './types.js';

export interface LayerURLPolicy {
  allow: RegExp[];
  deny: RegExp[];
}

/** why `url` is refused, or undefined when the policy lets it through */
function refusal(url: string, policy: LayerURLPolicy): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must be http or https';
  if (parsed.hash !== '') return 'must not have a fragment';
  // search() ignores lastIndex, so a pattern compiled with the g flag still behaves
  if (policy.allow.length === 0 && policy.deny.length === 0) return 'no layer URLs are allowed (validation.manifests.urls.allow is empty)';
  if (policy.allow.length > 0 && !policy.allow.some((re) => url.search(re) >= 0)) return 'matches no validation.manifests.urls.allow pattern';
  const denied = policy.deny.find((re) => url.search(re) >= 0);
  if (denied) return `matches validation.manifests.urls.deny pattern ${denied}`;
  return undefined;
}

export function checkLayerURLs(manifest: Pick<ManifestContent, 'layersWithURLs'>, policy: LayerURLPolicy): void {
  for (const layer of manifest.layersWithURLs) {
    for (const url of layer.urls ?? []) {
      const reason = refusal(url, policy);
      if (reason !== undefined) throw manifestInvalid('urls', 'urls', `layer ${layer.digest}: URL ${JSON.stringify(url)} ${reason}`, { digest: layer.digest, url, reason });
    }
  }
}
