/**
 * A private dockerd (Debian's docker.io) for tests: its own data root, exec root and socket, vfs
 * storage, no bridge and no iptables (it starts its own containerd). No container is ever run, so
 * no runtime is involved. docker treats registries on 127.0.0.0/8 as insecure (plain HTTP).
 *
 *   const daemon = await startDockerd(work, ['--registry-mirror', 'http://127.0.0.1:5001']);
 *   try { await daemon.docker('pull', 'alpine') } finally { await daemon.stop() }
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { killPid, spawnLogged } from './processes.js';
import { assertTool } from './tools.js';

const execFileP = promisify(execFile);
/** Debian's CLI when installed (another `docker` may come first on PATH) */
export const DOCKER = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';

export interface Dockerd {
  /** runs the docker CLI against this daemon; its stdout, trimmed; a failure carries the daemon's log */
  docker(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** starts dockerd with its state under `work` (plus `extraArgs`) and waits until it answers */
export async function startDockerd(work: string, extraArgs: string[] = []): Promise<Dockerd> {
  assertTool('dockerd', 'the docker tests');
  assertTool(DOCKER, 'the docker tests');
  const socket = join(work, 'docker.sock');
  const daemon = await spawnLogged(
    'dockerd',
    [
      '--data-root', join(work, 'data'),
      '--exec-root', join(work, 'exec'),
      '--pidfile', join(work, 'dockerd.pid'),
      '--host', `unix://${socket}`,
      '--bridge', 'none',
      '--iptables=false',
      '--ip6tables=false',
      '--storage-driver', 'vfs',
      ...extraArgs,
    ],
    { label: 'dockerd' },
  );
  const stop = async () => {
    await killPid(daemon, { graceMs: 15_000 });
    // dockerd makes its data root a mount point; a clean shutdown removes it, a killed one may not
    await execFileP('umount', [join(work, 'data')]).catch(() => undefined);
  };
  const docker = async (...args: string[]): Promise<string> => {
    try {
      return (await execFileP(DOCKER, ['--host', `unix://${socket}`, ...args], { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`docker ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}\n--- dockerd ---\n${daemon.logs().slice(-4000)}`);
    }
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await execFileP(DOCKER, ['--host', `unix://${socket}`, 'version'], { timeout: 5000 });
      return { docker, stop };
    } catch (err) {
      if (daemon.hasExited() || Date.now() > deadline) {
        await stop();
        throw new Error(`dockerd did not start: ${(err as Error).message}\n${daemon.logs().slice(-4000)}`);
      }
      await sleep(200);
    }
  }
}
