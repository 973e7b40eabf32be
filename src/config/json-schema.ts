/**
 * `berth config schema`: the configuration's JSON Schema (draft 2020-12) for editors, generated
 * from the zod schema that validates it, so the two cannot drift. It describes the file as
 * written (`io: input`: durations as strings, booleans as Go spells them); checks zod does in
 * code (one storage driver, credentials in pairs) are not in it, and `berth config check` still
 * has the last word.
 */
import { z } from 'zod';
import { configSchema } from './schema.js';

export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }),
    title: 'berth configuration',
    description: "berth's config.yml: CNCF Distribution's keys and berth's own (docs/configuration.md). `berth config check FILE` validates a file completely.",
  };
}
