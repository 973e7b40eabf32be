/** A throwaway Debian redis-server on a free port (no persistence), stopped by PID. */
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.js';
import { killPid, spawnLogged, type LoggedProcess } from './processes.js';
import { assertTool } from './tools.js';

export interface TestRedis {
  addr: string;
  port: number;
  process: LoggedProcess;
  stop(): Promise<void>;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function startRedis(): Promise<TestRedis> {
  assertTool('redis-server', 'rate limits shared through Redis');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const proc = await spawnLogged('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'], {
      label: 'redis',
    });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !proc.hasExited()) {
      if (await canConnect(port)) return { addr: `127.0.0.1:${port}`, port, process: proc, stop: () => killPid(proc) };
      await sleep(50);
    }
    await killPid(proc);
    if (attempt >= 2) throw new Error(`redis-server did not start on port ${port}:\n${proc.logs()}`);
  }
}
