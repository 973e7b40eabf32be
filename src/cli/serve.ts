/** `berth serve [CONFIG.yml]`: the registry, in this process or in several workers (src/workers/). */
import { compileFully, servingStarted } from '../runtime/startup-heap.js';
import { loadConfigIsolated } from '../config/load-isolated.js';
import { checkNamedFiles } from '../config/named-files.js';
import { createLogger } from '../log.js';
import { workerIndex } from '../workers/index.js';

export async function serve(file: string | undefined): Promise<number> {
  // validated in a short-lived process of its own: zod and the schema never load into the serving isolate
  const { config, source, warnings } = await loadConfigIsolated(file);
  const index = workerIndex();
  // before anything is written (the storage root, the upload secret); workers: their primary checked
  if (index === undefined) await checkNamedFiles(config, source);
  if (config.http.workers > 1 && index === undefined) {
    // the primary of several workers (src/workers/): it forks them and serves the debug listener
    const logger = createLogger(config.log);
    for (const warning of warnings) logger.warn(warning);
    const { runWorkers } = await import('../workers/index.js');
    compileFully(); // it serves the debug listener
    return runWorkers({ count: config.http.workers, logger, debug: config.http.debug });
  }
  // imported here: the other commands (garbage-collect) do not load the web server and its modules
  const { createApp } = await import('../app.js');
  const logger = index === undefined ? undefined : createLogger(config.log).child({ worker: index });
  const app = await createApp(config, { configSource: source, logger, worker: index === undefined ? undefined : { index } });
  if (index === undefined) for (const warning of warnings) app.logger.warn(warning);
  // listened for before listen(): the server answers before listen() resolves (its start-up
  // hooks run on), and a SIGTERM in between would otherwise end the process without a shutdown
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      app.logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await app.listen();
  servingStarted();
  await stopped;
  await app.close();
  return 0;
}
