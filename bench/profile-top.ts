/**
 * The top frames of a V8 CPU profile (node --cpu-prof), by self time and by total time:
 *
 *   BENCH_CPU_PROFILE=bench/profiles/x BENCH_ONLY=push npm run bench
 *   npx tsx bench/profile-top.ts bench/profiles/x/*.cpuprofile [N]
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const REPO = fileURLToPath(new URL('../', import.meta.url));

function frameName(f: CallFrame): string {
  const file = f.url.startsWith('file:') ? relative(REPO, fileURLToPath(f.url)) : f.url.startsWith('/') ? relative(REPO, f.url) : f.url;
  const where = file ? `${file}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
}

export function topFrames(profile: Profile, count: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const name = frameName(node.callFrame);
    self.set(name, (self.get(name) ?? 0) + us);
    // every distinct frame on the stack gets the time once (recursion counted once)
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = frameName(byId.get(cur)!.callFrame);
      if (seen.has(n)) continue;
      seen.add(n);
      inclusive.set(n, (inclusive.get(n) ?? 0) + us);
    }
  }
  const table = (m: Map<string, number>, title: string) => {
    const rows = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
    return [`${title}`, ...rows.map(([name, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1e6).toFixed(2).padStart(7)} s  ${name}`)].join('\n');
  };
  const idle = self.get('(idle)') ?? 0;
  return [
    `profile: ${(total / 1e6).toFixed(1)} s sampled, ${(((total - idle) / total) * 100).toFixed(1)}% not idle`,
    '',
    table(self, 'self time'),
    '',
    table(inclusive, 'total time (self + callees)'),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, n] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx bench/profile-top.ts FILE.cpuprofile [N]');
    process.exit(2);
  }
  console.log(topFrames(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(n ?? 25)));
}
