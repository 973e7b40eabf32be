/**
 * A pull rule's run, as the scheduler and `berth replicate run` start it: the run (pull.ts), its
 * figures, its result logged and kept in the rule's state (state.ts).
 */
import type { Logger } from 'pino';
import type { ReplicationCore } from './core.js';
import { PullRun, type PullSummary } from './pull.js';
import type { Remote } from './remote.js';
import type { ReplicationRule } from './rules.js';
import type { RuleFigures } from './stats.js';
import { readState, writeState } from './state.js';

export async function runPull(rule: ReplicationRule, remote: Remote, core: ReplicationCore, figures: RuleFigures, logger: Logger, options: { now(): number; signal?: AbortSignal }): Promise<PullSummary> {
  const started = options.now();
  const requestsBefore = remote.counts.requests;
  const run = new PullRun(rule, remote, core, figures, logger);
  const previous = await readState(core.driver, rule.name).catch(() => undefined);
  let failure: Error | undefined;
  try {
    await run.run(options.signal);
  } catch (err) {
    failure = err as Error;
  }
  const summary = run.summary;
  const ended = options.now();
  figures.runs++;
  figures.lastRunSeconds = (ended - started) / 1000;
  figures.lastRunEndSeconds = Math.floor(ended / 1000);
  figures.remoteRequests += remote.counts.requests - requestsBefore;
  const error = failure?.message ?? (summary.failed > 0 ? `${summary.failed} images could not be copied; the first: ${summary.errors[0]}` : undefined);
  if (failure) figures.runFailures++;
  if (error) figures.lastErrorSeconds = Math.floor(ended / 1000);
  const result = { rule: rule.name, ...summary, durationMs: ended - started };
  if (failure) logger.error({ ...result, err: failure }, `replication ${rule.name}: the run failed`);
  else if (summary.failed > 0) logger.warn(result, `replication ${rule.name}: run done, ${summary.failed} images failed`);
  else logger.info(result, `replication ${rule.name}: run done`);
  await writeState(core.driver, {
    rule: rule.name,
    direction: 'pull',
    figures: { ...figures },
    lastError: error ? { at: new Date(ended).toISOString(), message: error } : undefined,
    lastSuccess: error ? previous?.lastSuccess : new Date(ended).toISOString(),
  }).catch((err) => logger.warn({ err }, `replication ${rule.name}: could not record the run's result`));
  if (failure) throw failure;
  return summary;
}
