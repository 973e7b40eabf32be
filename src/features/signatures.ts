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
  auth?: unknown;
}

export const signaturesFeature: Feature<SignaturesConfig> = {
  name: 'signatures',
  enabled: (config) => (config.policies ?? []).some((p) => p.signatures !== undefined),
  async load(config, { logger }) {
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
    const requiring = policies.policies.filter((p) => p.options.signatures?.require);
    if (requiring.length > 0 && config.auth === undefined) {
      // callers that may push are exempt, and without auth every caller may push
      logger.warn({ policies: requiring.map((p) => p.source) }, 'signatures.require has no effect without auth: every client may push and so may pull unsigned images; configure auth.htpasswd or auth.token');
    }
    return {
      pullGate: (content) => new SignaturePolicy(policies, keySets, new SignatureVerifier(content)),
    };
  },
};
