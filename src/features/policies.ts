/**
 * Policies (`policies:`, src/policies/): immutable tags and quotas, asked by the core before a
 * manifest is pushed or deleted and by the edge before a blob upload. Quotas are counted from the
 * metadata index and serialised through its database: a policy with a quota and no index stops
 * start-up. (Signatures are their own part of the same block.)
 */
import { ConfigError } from '../config/errors.js';
import type { PolicyOptions } from '../policies/options.js';
import type { Feature } from './feature.js';

interface PoliciesConfig {
  policies?: PolicyOptions[];
  metadata?: { enabled: boolean };
}

export const policiesFeature: Feature<PoliciesConfig> = {
  name: 'policies',
  enabled: (config) => (config.policies ?? []).some((p) => p.immutabletags !== undefined || p.quota !== undefined),
  async load(config) {
    const policies = config.policies!;
    const withQuota = policies.flatMap((p, i) => (p.quota ? [`policies[${i}].quota`] : []));
    if (withQuota.length > 0 && config.metadata?.enabled !== true) {
      throw new ConfigError(
        withQuota.map((key) => `${key}: quotas are counted from the metadata index and checked through its database; turn it on (metadata.enabled: true, docs/configuration.md "Metadata index") or remove the quota`),
        withQuota[0],
      );
    }
    const [{ PolicySet }, { PolicyGuard }] = await Promise.all([import('../policies/match.js'), import('../policies/guard.js')]);
    const set = new PolicySet(policies);
    return {
      async policies(running) {
        if (withQuota.length === 0 || !running.database) return { manifests: new PolicyGuard(set, undefined) };
        const [{ Quotas }, { QuotaReads }, { ScopeLocks }] = await Promise.all([import('../policies/quota.js'), import('../metadata/quota-reads.js'), import('../policies/scope-lock.js')]);
        const quotas = new Quotas(set, new QuotaReads(running.database), running.driver, new ScopeLocks(running.database));
        const guard = new PolicyGuard(set, quotas);
        return { manifests: guard, uploads: quotas };
      },
    };
  },
};
