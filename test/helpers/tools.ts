// Guards for tests that need external programs (docker-registry, skopeo, redis-server, radosgw).
//
// Locally a missing tool skips the test, loudly. In CI (CI=true) a missing tool must fail the
// run, so a forgotten install step in .ci/run is caught instead of silently skipping coverage:
//
//   describe('reference registry', needTool('docker-registry', 'reference registry'), () => {
//     before(() => assertTool('docker-registry'));   // throws in CI when missing
//     ...
//   });
//
// needTool() returns `{ skip: false }` in CI even when the tool is missing; the test body then
// fails with a clear message, from assertTool() or from any helper that spawns the tool
// (they call assertTool() themselves). Set BERTH_REQUIRE_TOOLS=1 to get the CI behaviour locally.

import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** How to install each tool on Debian bookworm (package names differ from command names). */
const INSTALL_HINTS: Record<string, string> = {
  'docker-registry': 'apt-get install -y docker-registry',
  skopeo: 'apt-get install -y skopeo',
  'redis-server': 'apt-get install -y redis-server',
  'redis-cli': 'apt-get install -y redis-tools',
  radosgw: 'apt-get install -y radosgw',
  'ceph-mon': 'apt-get install -y ceph-mon',
  'ceph-osd': 'apt-get install -y ceph-osd',
  ceph: 'apt-get install -y ceph-common',
  'radosgw-admin': 'apt-get install -y ceph-common',
  monmaptool: 'apt-get install -y ceph-base (a dependency of ceph-mon)',
  uuidgen: 'apt-get install -y uuid-runtime',
  curl: 'apt-get install -y curl',
  podman: 'apt-get install -y podman',
  buildah: 'apt-get install -y buildah',
  containerd: 'apt-get install -y containerd',
  ctr: 'apt-get install -y containerd',
  dockerd: 'apt-get install -y docker.io',
  docker: 'apt-get install -y docker.io',
  'systemd-analyze': 'apt-get install -y systemd',
  haproxy: 'apt-get install -y haproxy',
  postgres: 'apt-get install -y postgresql',
  cosign: '.ci/get-cosign.sh (Debian trixie\'s cosign .deb, unpacked into /opt/berth-tools)',
};

/** The install command for a tool (falls back to a package of the same name). */
export function installHint(cmd: string): string {
  const base = cmd.split('/').pop() ?? cmd;
  return INSTALL_HINTS[base] ?? `apt-get install -y ${base}`;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Full path of `cmd` found on PATH (or `cmd` itself when it contains a slash and is executable). */
export function whichTool(cmd: string): string | undefined {
  if (cmd.includes('/')) return isExecutableFile(cmd) ? cmd : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, cmd);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** True if `cmd` is an executable on PATH (or an executable path). */
export function toolAvailable(cmd: string): boolean {
  return whichTool(cmd) !== undefined;
}

/** True when missing tools must fail instead of skip: CI=true, or BERTH_REQUIRE_TOOLS=1. */
export function toolsRequired(): boolean {
  return process.env.CI === 'true' || process.env.BERTH_REQUIRE_TOOLS === '1';
}

export class ToolMissingError extends Error {
  constructor(cmd: string, why?: string) {
    super(
      `${cmd} not found on PATH${why ? ` (needed for ${why})` : ''}: ${installHint(cmd)}` +
        (process.env.CI === 'true' ? ' -- add it to the package list in .ci/run' : ''),
    );
    this.name = 'ToolMissingError';
  }
}

/** Throw a ToolMissingError naming the install command when `cmd` is not available. */
export function assertTool(cmd: string, why?: string): void {
  if (!toolAvailable(cmd)) throw new ToolMissingError(cmd, why);
}

const announced = new Set<string>();

/**
 * Options for node:test's describe(name, opts, fn) / it(name, opts, fn).
 * - tool present: `{ skip: false }`.
 * - tool missing, locally: `{ skip: '<reason>' }`, with `SKIPPED: ...` printed to stderr once per tool.
 * - tool missing, in CI (or BERTH_REQUIRE_TOOLS=1): `{ skip: false }` so the test runs and fails
 *   in assertTool() / the spawning helper with a message saying what to install.
 */
export function needTool(cmd: string, why: string): { skip: string | false } {
  if (toolAvailable(cmd)) return { skip: false };
  if (toolsRequired()) return { skip: false };
  const reason = `${cmd} not found (${why}): ${installHint(cmd)}`;
  if (!announced.has(cmd)) {
    announced.add(cmd);
    process.stderr.write(`SKIPPED: ${reason}\n`);
  }
  return { skip: reason };
}

/** Same as needTool() for several tools at once; the first missing one decides. */
export function needTools(cmds: readonly string[], why: string): { skip: string | false } {
  for (const cmd of cmds) {
    const opts = needTool(cmd, why);
    if (opts.skip !== false) return opts;
  }
  return { skip: false };
}
