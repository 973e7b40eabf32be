/**
 * The primary process and its workers talk over the cluster's IPC channel, for the one debug
 * listener the primary serves: it asks every worker for its `/debug/vars`, health verdict and
 * Prometheus figures, and merges them (merge.ts).
 */
import cluster, { type Worker } from 'node:cluster';

export type DebugQuestion = 'vars' | 'health' | 'metrics';

interface Ask {
  berth: 'debug-ask';
  id: number;
  what: DebugQuestion;
}

interface Answer {
  berth: 'debug-answer';
  id: number;
  value?: unknown;
  error?: string;
}

/** worker side: answers the primary's questions with `answers` */
export function answerPrimary(answers: Record<DebugQuestion, () => Promise<unknown> | unknown>): void {
  process.on('message', (message: Ask) => {
    if (message?.berth !== 'debug-ask') return;
    Promise.resolve()
      .then(() => answers[message.what]())
      .then(
        (value) => process.send?.({ berth: 'debug-answer', id: message.id, value } satisfies Answer),
        (err: unknown) => process.send?.({ berth: 'debug-answer', id: message.id, error: String(err) } satisfies Answer),
      );
  });
}

let nextId = 0;
/** a worker that does not answer within this is left out of the figures (it may be restarting) */
const ANSWER_MS = 2000;

/** primary side: every live worker's answer (a worker that fails or is silent is left out) */
export async function askWorkers(what: DebugQuestion): Promise<{ worker: Worker; value: unknown }[]> {
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected());
  const answers = await Promise.all(workers.map((worker) => ask(worker, what)));
  return answers.flatMap((value, i) => (value === undefined ? [] : [{ worker: workers[i], value }]));
}

function ask(worker: Worker, what: DebugQuestion): Promise<unknown> {
  const id = ++nextId;
  return new Promise((resolve) => {
    const done = (value: unknown) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve(value);
    };
    const onMessage = (message: Answer) => {
      if (message?.berth === 'debug-answer' && message.id === id) done(message.error === undefined ? message.value : undefined);
    };
    const timer = setTimeout(() => done(undefined), ANSWER_MS);
    worker.on('message', onMessage);
    worker.send({ berth: 'debug-ask', id, what } satisfies Ask);
  });
}
