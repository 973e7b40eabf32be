/**
 * The real cosign (Sigstore's signing tool) for tests that sign and verify images. Debian bookworm
 * has no package: .ci/get-cosign.sh unpacks trixie's .deb into /opt/berth-tools (BERTH_TOOLS_DIR
 * moves it). Skipped loudly when missing; under CI=true a missing cosign fails (tools.ts).
 *
 *   describe('signatures', needCosign(), () => { ... await runCosign(dir, ['sign', ...]) ... });
 *
 * runCosign() runs it asynchronously (a berth in this process must keep answering), offline: HOME
 * is the test's directory (no ~/.sigstore of the machine), and every request off 127.0.0.0/8 goes
 * to a proxy that does not exist, so a test that would need Rekor, Fulcio or TUF fails instead of
 * reaching out (sign with a key pair and `--tlog-upload=false`, verify with `--insecure-ignore-tlog=true`).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cleanEnv } from './processes.js';
import { assertTool, needTool } from './tools.js';

const run = promisify(execFile);

/** where .ci/get-cosign.sh puts the binary */
export const COSIGN = join(process.env.BERTH_TOOLS_DIR ?? '/opt/berth-tools', 'cosign');

/** the password the test key pairs are encrypted with (cosign reads COSIGN_PASSWORD) */
export const COSIGN_PASSWORD = 'berth-test-key-pw';

/** node:test options: run, or skip loudly (fail under CI=true) without the binary */
export function needCosign(): { skip: string | false } {
  return needTool(COSIGN, 'signing and verifying images with the real cosign');
}

/**
 * Runs cosign in `dir` (also its HOME) with COSIGN_PASSWORD set; resolves with its output, rejects
 * with an error holding both streams when it exits non-zero or outlives `timeoutMs`.
 */
export async function runCosign(dir: string, args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string }> {
  assertTool(COSIGN, 'signing and verifying images with the real cosign');
  const offline = { HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.0/8,localhost', https_proxy: undefined, http_proxy: undefined, no_proxy: undefined };
  const env = cleanEnv({ set: { HOME: dir, COSIGN_PASSWORD, COSIGN_YES: 'true', ...offline, ...options.env } });
  try {
    return await run(COSIGN, args, { cwd: dir, env, timeout: options.timeoutMs ?? 60_000, maxBuffer: 4 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`cosign ${args.join(' ')} failed: ${e.message}\nstdout: ${e.stdout ?? ''}\nstderr: ${e.stderr ?? ''}`);
  }
}

/** `cosign generate-key-pair` in `dir`: the paths of cosign.key and cosign.pub */
export async function generateKeyPair(dir: string): Promise<{ key: string; pub: string }> {
  await runCosign(dir, ['generate-key-pair']);
  return { key: join(dir, 'cosign.key'), pub: join(dir, 'cosign.pub') };
}
