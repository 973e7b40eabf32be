/**
 * Debian's HAProxy in front of berth instances, for tests and the bench: a generated haproxy.cfg
 * on a free 127.0.0.1 port, round robin per request with no stickiness, health checks on
 * /readyz, retries on another server for requests whose server went away. Each
 * response names the server that answered in `x-served-by`. Stopped by PID.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { killPid, spawnLogged, waitForHttp, type LoggedProcess } from './processes.js';
import { assertTool } from './tools.js';

export interface Balancer {
  url: string;
  /** the server name HAProxy gives backend i (the value of `x-served-by`) */
  serverNames: string[];
  process: LoggedProcess;
  stop(): Promise<void>;
}

export interface HaproxyOptions {
  /** more lines for the `defaults` section (e.g. `timeout check 5s` where instances answer slowly under load) */
  defaults?: string[];
}

/** haproxy.cfg for `backends` (base URLs such as http://127.0.0.1:5000), listening on `port` */
export function haproxyConfig(port: number, backends: string[], options: HaproxyOptions = {}): string {
  const servers = backends.map((url, i) => `  server berth${i} ${new URL(url).host} check inter 500ms fall 2 rise 2`);
  return [
    'global',
    '  maxconn 2000',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 300s',
    '  timeout server 300s',
    // a request whose server refused the connection or closed it without an answer (an instance
    // stopped or killed) is sent again to another server, when HAProxy holds all of it (no big body)
    '  retries 3',
    '  retry-on conn-failure empty-response junk-response',
    '  option redispatch 1',
    ...(options.defaults ?? []).map((line) => `  ${line}`),
    'frontend registry',
    `  bind 127.0.0.1:${port}`,
    '  default_backend berth',
    'backend berth',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  http-response set-header x-served-by %s',
    ...servers,
    '',
  ].join('\n');
}

export async function startHaproxy(backends: string[], options: HaproxyOptions = {}): Promise<Balancer> {
  assertTool('haproxy', 'the tests of several berth instances behind a load balancer');
  const dir = await mkdtemp(join(tmpdir(), 'berth-haproxy-'));
  const cfg = join(dir, 'haproxy.cfg');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    await writeFile(cfg, haproxyConfig(port, backends, options));
    const proc = await spawnLogged('haproxy', ['-db', '-f', cfg], { label: `haproxy:${port}` });
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${url}/v2/`, { process: proc, timeoutMs: 15_000, name: 'haproxy' });
      return {
        url,
        serverNames: backends.map((_, i) => `berth${i}`),
        process: proc,
        stop: async () => {
          await killPid(proc, { graceMs: 2000 });
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      await killPid(proc, { graceMs: 1000 }).catch(() => undefined);
      if (attempt >= 2 || !/cannot bind|Address already in use/i.test(proc.logs())) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
    }
  }
}
