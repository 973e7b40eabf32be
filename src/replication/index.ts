/**
 * The configured rules as the registry runs them (see README.md): pull rules on the scheduler,
 * each a pass shared by every instance on the storage (registry/shared-schedule.ts: one instance
 * runs a rule at a time); push rules fed by the edge's events and sending their queue on the
 * scheduler; every rule's figures for /debug/vars and Prometheus.
 */
import type { Logger } from 'pino';
import type { EventSink } from '../notifications/events.js';
import { sharedPass } from '../registry/shared-schedule.js';
import type { Clock } from '../scheduler/clock.js';
import type { PeriodicTask } from '../scheduler/scheduler.js';
import type { ReplicationCore } from './core.js';
import { PushReplication } from './push.js';
import { Remote } from './remote.js';
import type { ReplicationRule } from './rules.js';
import { runPull } from './run.js';
import { emptyFigures, figuresSection, type RuleFigures } from './stats.js';

export type { ReplicationRule } from './rules.js';

export interface ReplicationPlan {
  /** what the edge reports: pushes and deletes queued for the push rules they match */
  events: EventSink;
  /** once the core is built: the rules' tasks, handed to `schedule` */
  start(core: ReplicationCore, schedule: (task: PeriodicTask) => void): void;
  figures(): Record<string, Record<string, number>>;
  /** at shutdown: every push and delete heard is written to its queue */
  close(): Promise<void>;
}

export function replicationPlan(rules: readonly ReplicationRule[], options: { logger: Logger; clock: Clock; readOnly: boolean }): ReplicationPlan {
  const logger = options.logger.child({ component: 'replication' });
  const figures = new Map<string, RuleFigures>(rules.map((rule) => [rule.name, emptyFigures()]));
  const pushes: PushReplication[] = [];
  return {
    events: {
      active: rules.some((rule) => rule.direction === 'push'),
      // the core, and so the push rules, are built before the edge can report anything
      emit: (event) => pushes.forEach((push) => push.observe(event)),
    },
    start(core, schedule) {
      for (const rule of rules) {
        const remote = new Remote(rule.remote, logger.child({ rule: rule.name, remote: new URL(rule.remote.url).host }), rule);
        const ruleFigures = figures.get(rule.name)!;
        if (rule.direction === 'push') {
          const push = new PushReplication(rule, remote, core, ruleFigures, options.clock, logger);
          pushes.push(push);
          schedule(push.task());
        } else if (rule.interval !== undefined && options.readOnly) {
          logger.warn({ rule: rule.name }, `replication ${rule.name}: not scheduled, the registry is read-only (storage.maintenance.readonly)`);
        } else if (rule.interval !== undefined) {
          schedule(
            sharedPass(core.driver, options.clock, logger, {
              name: `replication ${rule.name}`,
              stateName: `replication-${rule.name}`,
              interval: rule.interval,
              run: async (signal) => {
                await runPull(rule, remote, core, ruleFigures, logger, { now: () => options.clock.now(), signal });
              },
            }),
          );
        }
      }
    },
    close: async () => {
      await Promise.all(pushes.map((push) => push.queued()));
    },
    figures: () => Object.fromEntries([...figures].map(([rule, values]) => [figuresSection(rule), { ...values }])),
  };
}
