/**
 * Signature policies (src/policies/signatures/): on when a policy sets `signatures`. The keys are
 * read at start-up (a missing or malformed key file stops it); the pull gate reads signatures
 * through the finished ContentSource (storage, or the pull-through cache).
 */
import { ConfigError } from '../config/errors.js';
import type { PolicyOptions } from '../policies/options.js';
import type { Feature } from './feature.js';

export interface SignaturesConfig {
  policies?: PolicyOptions[];
}

export const signaturesFeature: Feature<SignaturesConfig> = {
  name: 'signatures',
  enabled: (config) => (config.policies ?? []).some((p) => p.signatures !== undefined),
  async load(config) {
    const [{ PolicySet }, { readKeySets }, { SignaturePolicy }, { SignatureVerifier }] = await Promise.all([
      import('../policies/match.js'),
      import('../policies/signatures/keys.js'),
      import('../policies/signatures/gate.js'),
      import('../policies/signatures/verifier.js'),
    ]);
    const policies = new PolicySet(config.policies);
    let keySets;
    try {
      keySets = readKeySets(policies);
    } catch (err) {
      throw new ConfigError([(err as Error).message], 'policies');
    }
    return {
      pullGate: (content, audit) => new SignaturePolicy(policies, keySets, new SignatureVerifier(content), audit),
    };
  },
};
