/**
 * Fastify's schema compilers for a server whose routes have no JSON schema (berth validates by
 * hand, with the spec's error codes). The defaults would load ajv, ajv-formats and
 * fast-json-stringify at start-up (about 1.3 MiB of heap, docs/decisions.md "Memory"); these
 * refuse loudly should a route ever be given a schema.
 */
const refuse = (): never => {
  throw new Error('berth routes take no JSON schema (src/http/no-schemas.ts)');
};

export const noSchemaCompilers = {
  compilersFactory: { buildValidator: () => refuse, buildSerializer: () => refuse },
};
