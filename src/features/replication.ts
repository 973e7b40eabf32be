/**
 * Replication (`replication:`, src/replication/): pull rules run on the scheduler, push rules
 * hear every push and delete of the edge and send them to their remote. Passwords may come from
 * files, read here at start.
 */
import type { Feature } from './feature.js';
import { password } from './proxy.js';

interface RemoteConfig {
  url: string;
  username?: string;
  password?: string;
  passwordfile?: string;
  realmhosts?: string[];
  redirecthosts?: string[];
}

export interface ReplicationRuleConfig {
  name: string;
  pull?: RemoteConfig;
  push?: RemoteConfig;
  repositories: string[];
  tags?: string[];
  platforms?: string[];
  interval?: number;
  deletes: boolean;
  concurrency: number;
}

interface ReplicationConfig {
  replication?: ReplicationRuleConfig[];
  storage: { maintenance: { readonly: { enabled: boolean } } };
}

/** the rules as src/replication/ takes them, each password read from its file where it came from one */
export async function replicationRules(rules: readonly ReplicationRuleConfig[]) {
  return Promise.all(
    rules.map(async (rule, i) => {
      const direction = rule.pull ? ('pull' as const) : ('push' as const);
      const remote = (rule.pull ?? rule.push)!;
      const { passwordfile: _, ...rest } = remote;
      return {
        name: rule.name,
        direction,
        remote: { ...rest, password: await password(remote, `replication.${i}.${direction}`) },
        repositories: rule.repositories,
        tags: rule.tags,
        platforms: rule.platforms,
        interval: rule.interval,
        deletes: rule.deletes,
        concurrency: rule.concurrency,
      };
    }),
  );
}

export const replicationFeature: Feature<ReplicationConfig> = {
  name: 'replication',
  enabled: (config) => (config.replication?.length ?? 0) > 0,
  async load(config, { logger, scheduler }) {
    const { replicationPlan } = await import('../replication/index.js');
    const plan = replicationPlan(await replicationRules(config.replication!), { logger, clock: scheduler.clock, readOnly: config.storage.maintenance.readonly.enabled });
    return {
      events: plan.events,
      withCore: (core) => plan.start(core, (task) => scheduler.every(task)),
      figures: () => plan.figures(),
      close: () => plan.close(),
    };
  },
};
