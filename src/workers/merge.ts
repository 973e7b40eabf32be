/**
 * The workers' `/debug/vars` as one: numbers are added up (requests, bytes, queue lengths,
 * memory), lists of named things (notification endpoints) are merged by name, anything else is
 * the first worker's. Figures that are not counts (a last run's duration, a time) come from the one
 * worker that runs the periodic tasks, the others report zeros, so adding keeps them right.
 */
export function mergeVars(values: unknown[]): unknown {
  const [first, ...rest] = values;
  return rest.reduce((merged, value) => mergeTwo(merged, value), first);
}

function mergeTwo(a: unknown, b: unknown): unknown {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (Array.isArray(a) && Array.isArray(b)) {
    const named = (list: unknown[]) => list.every((item) => typeof (item as { name?: unknown })?.name === 'string');
    if (!named(a) || !named(b)) return a;
    const byName = new Map(a.map((item) => [(item as { name: string }).name, item]));
    for (const item of b) {
      const name = (item as { name: string }).name;
      byName.set(name, byName.has(name) ? mergeTwo(byName.get(name), item) : item);
    }
    return [...byName.values()];
  }
  if (isRecord(a) && isRecord(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const [key, value] of Object.entries(b)) out[key] = key in out ? mergeTwo(out[key], value) : value;
    return out;
  }
  return a;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
