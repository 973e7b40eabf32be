/**
 * `npm start` (the README's first command) runs built code in one registry process and stops on
 * SIGTERM, which systemd and container runtimes send to the process they started (npm here).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { holdBuildLock } from '../helpers/build-lock.js';
import { freePort } from '../helpers/ports.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** npm's children (pid and command line): the registry, once `npm start` has built and started it */
function childrenOf(pid: number): { pid: number; args: string }[] {
  try {
    const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' }).trim().split('\n');
    return lines.filter(Boolean).map((line) => ({ pid: Number(line.trim().split(/\s+/)[0]), args: line.trim() }));
  } catch {
    return []; // ps exits 1 when there is none
  }
}

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

describe('npm start', () => {
  it('serves from dist/ in one process under npm and stops with npm on SIGTERM (no orphan)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-npm-start-'));
    const port = await freePort();
    // npm start builds dist/ first (prestart), then serves from it: no other test's build meanwhile
    const releaseBuild = await holdBuildLock();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: REPO_ROOT,
      env: { ...process.env, REGISTRY_HTTP_ADDR: `127.0.0.1:${port}`, REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY: root },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout.on('data', (chunk) => (output += chunk));
    npm.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
    let registryPid: number | undefined;
    try {
      // npm start builds first (tsc, the web interface, the server bundle): slow on a loaded machine
      const up = await until(async () => (await fetch(`http://127.0.0.1:${port}/v2/`).catch(() => undefined))?.status === 200, 150_000);
      assert.ok(up, `the registry did not answer:\n${output}`);
      // the registry is npm's only child, running compiled JavaScript (not tsx)
      const children = childrenOf(npm.pid!);
      assert.equal(children.length, 1, children.map((c) => c.args).join('\n'));
      assert.match(children[0].args, /node dist\/bundle\/cli\.js serve/);
      registryPid = children[0].pid;

      npm.kill('SIGTERM');
      await exited;
      assert.ok(await until(() => !alive(registryPid!), 15_000), 'the registry outlived npm');
      assert.match(output, /"signal":"SIGTERM".*shutting down/);
    } finally {
      await releaseBuild();
      // a failure before the registry's PID was read still stops it: whatever npm started
      const started = registryPid !== undefined ? [registryPid] : npm.exitCode === null ? childrenOf(npm.pid!).map((c) => c.pid) : [];
      for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
      if (npm.exitCode === null) npm.kill('SIGKILL');
      await rm(root, { recursive: true, force: true });
    }
  });
});
