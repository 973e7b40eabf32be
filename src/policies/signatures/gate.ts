/**
 * The signatures policy on pulls: with `signatures.require`, a manifest (GET or HEAD, by tag or by
 * digest) that no key of the deciding policy signed is refused. Not checked:
 * - callers that may push to the repository (the CI job reads back what it pushed, to sign it);
 * - what is attached to images: signatures, attestations, SBOMs and other artifacts, judged by
 *   their content, not their tag or subject (cosign.ts isAttachment);
 * - blobs (content addressed: a client reaches them through a manifest it was allowed).
 * An index signed as a whole covers its children (docs/decisions.md): a manifest pulled by digest
 * is served when it is signed itself or an index in the repository that lists it is signed. Such
 * indexes are remembered per child once seen; otherwise the repository's first TAGS_SCANNED
 * (non-cosign) tags are looked through for one.
 */
import { LRUCache } from 'lru-cache';
import type { Digest } from '../../registry/digest.js';
import type { MatchedPolicy, PolicySet } from '../match.js';
import { parseObject } from '../../registry/indexing/json-object.js';
import { isAttachment } from './cosign.js';
import type { KeySet } from './keys.js';
import type { SignatureVerifier } from './verifier.js';

/** who pulls: the edge knows from the caller's grant */
export interface PullCaller {
  /** may push to the repository: exempt */
  mayPush: boolean;
}

/** the edge's view of the policy: why this pull is refused, if it is */
export interface PullGate {
  refusal(name: string, reference: { tag: string } | { digest: Digest }, manifest: { digest: Digest; content: Buffer }, caller: PullCaller): Promise<string | undefined>;
  /** for the web interface: the names of the keys that signed the image, or undefined where no signatures policy applies */
  signedBy(name: string, digest: Digest): Promise<readonly string[] | undefined>;
}

/** tags looked through for an index that covers a child pulled by digest */
export const TAGS_SCANNED = 100;
/** children whose covering indexes are remembered */
const CHILDREN_KEPT = 10_000;

export class SignaturePolicy implements PullGate {
  /** repository + child digest -> indexes seen to list it */
  private readonly parents = new LRUCache<string, Set<Digest>>({ max: CHILDREN_KEPT });

  /** `keySets`: every signatures policy's keys (keys.ts readKeySets) */
  constructor(
    private readonly policies: PolicySet,
    private readonly keySets: ReadonlyMap<MatchedPolicy, KeySet>,
    private readonly verifier: SignatureVerifier,
  ) {}

  async refusal(name: string, reference: { tag: string } | { digest: Digest }, manifest: { digest: Digest; content: Buffer }, caller: PullCaller): Promise<string | undefined> {
    const policy = this.policies.deciding(name, 'signatures');
    if (!policy?.options.signatures?.require || caller.mayPush) return undefined;
    const json = parseObject(manifest.content);
    if (isAttachment(json)) return undefined;
    const keys = this.keySets.get(policy)!;
    if ((await this.signers(name, manifest.digest, json, keys)).length > 0) return undefined;
    if ('digest' in reference && (await this.coveredByIndex(name, manifest.digest, keys))) return undefined;
    const names = keys.keys.map((k) => k.name).join(', ');
    const message = `${name}@${manifest.digest} is not signed by a key that ${policy.source} trusts (${names}): that policy requires a cosign signature to pull it`;
    return message;
  }

  async signedBy(name: string, digest: Digest): Promise<readonly string[] | undefined> {
    const policy = this.policies.deciding(name, 'signatures');
    if (!policy) return undefined;
    return this.verifier.signers(name, digest, this.keySets.get(policy)!);
  }

  /** the signers of a manifest; an index's children are remembered as covered by it when it is signed */
  private async signers(name: string, digest: Digest, json: unknown, keys: KeySet): Promise<readonly string[]> {
    const signers = await this.verifier.signers(name, digest, keys);
    if (signers.length > 0) {
      for (const child of childrenOf(json)) {
        const key = `${name}@${child}`;
        this.parents.set(key, (this.parents.get(key) ?? new Set()).add(digest));
      }
    }
    return signers;
  }

  /** is `child` listed by a signed index of the repository: one remembered, or one a tag names */
  private async coveredByIndex(name: string, child: Digest, keys: KeySet): Promise<boolean> {
    for (const parent of this.parents.get(`${name}@${child}`) ?? []) {
      const index = await this.verifier.manifestJSON(name, { digest: parent });
      if (index && childrenOf(index.json).includes(child) && (await this.verifier.signers(name, parent, keys)).length > 0) return true;
    }
    for (const tag of await this.verifier.imageTags(name, TAGS_SCANNED)) {
      const index = await this.verifier.manifestJSON(name, { tag });
      if (index && childrenOf(index.json).includes(child) && (await this.signers(name, index.digest, index.json, keys)).length > 0) return true;
    }
    return false;
  }
}

/** the child manifests an index lists; none for anything else */
function childrenOf(json: unknown): Digest[] {
  const manifests = (json as { manifests?: unknown } | undefined)?.manifests;
  if (!Array.isArray(manifests)) return [];
  return manifests.map((m: { digest?: unknown }) => m?.digest).filter((d): d is Digest => typeof d === 'string');
}
