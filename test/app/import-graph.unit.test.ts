/**
 * The house's rule, checked on the code (docs/architecture.md): imports run down (entry points,
 * composition root, edge, core, drivers), no module imports one of the rooms above it, the
 * configuration type stays with the composition root, and the import graph has no cycle.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '../../src');

/** every module of src/ (the browser code has its own tsconfig and imports nothing of the server) and what it imports of src/ */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative(SRC, path) !== 'ui/client') visit(path);
      } else if (entry.name.endsWith('.ts')) {
        const text = readFileSync(path, 'utf8');
        const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)\.js'/g)].map((m) => relative(SRC, normalize(join(dirname(path), `${m[1]}.ts`))));
        graph.set(relative(SRC, path), targets);
      }
    }
  };
  visit(SRC);
  return graph;
}

/** rooms (a folder, or a file by its path) and what each of them must not import */
const FORBIDDEN: [string, string[]][] = [
  ['storage/', ['registry/', 'http/', 'proxy/', 'ui/', 'auth/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['metadata/', ['registry/', 'storage/', 'http/', 'proxy/', 'ui/', 'auth/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['registry/', ['http/', 'proxy/', 'ui/', 'auth/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['http/', ['ui/', 'features/', 'cli/', 'runtime/', 'config/schema.ts', 'app.ts', 'cli.ts']],
  ['proxy/', ['http/', 'ui/', 'features/', 'cli/', 'runtime/', 'config/schema.ts', 'app.ts', 'cli.ts']],
  ['replication/', ['http/', 'ui/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['auth/', ['http/', 'ui/', 'features/', 'cli/', 'runtime/', 'config/schema.ts', 'app.ts', 'cli.ts']],
  ['notifications/', ['registry/', 'http/', 'features/', 'cli/', 'runtime/', 'config/schema.ts', 'app.ts']],
  ['policies/', ['http/', 'ui/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['audit/', ['http/', 'proxy/', 'ui/', 'auth/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts', 'cli.ts']],
  ['scheduler/', ['registry/', 'storage/', 'http/', 'features/', 'cli/', 'runtime/', 'config/', 'app.ts']],
  ['features/', ['cli/', 'config/schema.ts', 'app.ts', 'cli.ts']],
  ['ui/', ['features/', 'cli/', 'runtime/', 'config/schema.ts', 'app.ts']],
  ['banner.ts', ['config/schema.ts']],
];

describe('the import graph', () => {
  const graph = importGraph();

  it('runs down: no room imports one above it', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      for (const [room, above] of FORBIDDEN) {
        if (!file.startsWith(room)) continue;
        for (const target of targets) if (above.some((a) => target.startsWith(a))) upward.push(`${file} -> ${target}`);
      }
    }
    assert.deepEqual(upward, []);
  });

  it('has no cycle', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const walk = (file: string, path: string[]) => {
      state.set(file, 'open');
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' -> '));
        else if (!state.has(target) && graph.has(target)) walk(target, [...path, target]);
      }
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) walk(file, [file]);
    assert.deepEqual(cycles, []);
  });

  it('reads every module it checks', () => {
    assert.ok(graph.size > 150, `${graph.size} modules`);
    assert.ok(graph.get('app.ts')?.includes('features/storage.ts'));
  });
});
