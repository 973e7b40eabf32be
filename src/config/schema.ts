/**
 * The configuration schema: Distribution's YAML shape, validated with zod. Every value a user can
 * write is declared here with its default; nothing else in berth reads raw configuration.
 * Environment overrides arrive as strings, so booleans, integers and durations also accept strings.
 */
import { z } from 'zod';
import { parseDuration } from './duration.js';

const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

const int = (min = 0) =>
  z.union([z.number(), z.string().regex(/^-?\d+$/, 'expected an integer').transform(Number)]).pipe(z.number().int().min(min));

/** a Go-style duration string, held as milliseconds */
const duration = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration such as "500ms", "30s", "1h30m" or "168h", got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  return ms;
});

/** a regular expression (JavaScript syntax; Go's RE2 patterns of Distribution's examples are valid here too) */
const pattern = z.string().refine(
  (source) => {
    try {
      new RegExp(source);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'expected a valid regular expression' },
);

/** a key Distribution has and berth does not implement yet: refused with a clear message rather than ignored */
const notYet = (what: string) =>
  z
    .unknown()
    .refine((value) => value === undefined, { message: `${what} is not implemented in this version of berth; remove the key` })
    .optional();

const listenAddress = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):\d{1,5}$/, 'expected host:port, e.g. "0.0.0.0:5000" or ":5000"');

const filesystemDriver = z.strictObject({
  rootdirectory: z.string().min(1).default('/var/lib/registry'),
  maxthreads: int(25).optional(),
});

const inmemoryDriver = z.union([z.strictObject({}), z.null(), z.literal('')]).transform(() => ({}));

const storage = z
  .strictObject({
    filesystem: filesystemDriver.optional(),
    inmemory: inmemoryDriver.optional(),
    delete: z.strictObject({ enabled: bool.default(false) }).default({ enabled: false }),
    redirect: z.strictObject({ disable: bool.default(false) }).default({ disable: false }),
    cache: z.strictObject({ blobdescriptor: z.enum(['inmemory']).optional() }).optional(),
    maintenance: z
      .strictObject({
        uploadpurging: z
          .strictObject({
            enabled: bool.default(true),
            age: duration.prefault('168h'),
            interval: duration.prefault('24h'),
            dryrun: bool.default(false),
          })
          .prefault({}),
        readonly: z.strictObject({ enabled: bool.default(false) }).default({ enabled: false }),
      })
      .prefault({}),
  })
  .superRefine((value, ctx) => {
    const drivers = DRIVER_NAMES.filter((name) => value[name] !== undefined);
    if (drivers.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          drivers.length === 0
            ? `exactly one storage driver is required: one of ${DRIVER_NAMES.join(', ')}`
            : `exactly one storage driver is allowed, found ${drivers.join(' and ')}`,
      });
    }
  });

export const DRIVER_NAMES = ['filesystem', 'inmemory'] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

const log = z
  .strictObject({
    level: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
    formatter: z.enum(['json', 'text']).default('json'),
    accesslog: z.strictObject({ disabled: bool.default(false) }).default({ disabled: false }),
    fields: z.record(z.string(), z.unknown()).optional(),
  })
  .prefault({});

const http = z
  .strictObject({
    addr: listenAddress.default(':5000'),
    host: z.url({ message: 'expected an absolute URL such as "https://registry.example.com"' }).optional(),
    prefix: z
      .string()
      .regex(/^\/([A-Za-z0-9._~-]+\/)*$/, 'expected a path that starts and ends with "/", e.g. "/registry/"')
      .optional(),
    secret: z.string().min(1).optional(),
    relativeurls: bool.default(false),
    headers: z.record(z.string(), z.array(z.string())).default({}),
    /** how long a shutdown (SIGTERM) waits for requests in flight, then for queued events */
    draintimeout: duration.prefault('10s'),
    debug: z
      .strictObject({
        addr: listenAddress,
        prometheus: z
          .strictObject({
            enabled: bool.default(false),
            path: z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, 'expected a path such as "/metrics"').default('/metrics'),
          })
          .prefault({}),
      })
      .optional(),
  })
  .prefault({});

/** an HTTP(S) URL (the schema of a notification endpoint's `url`) */
const httpURL = z.string().refine(
  (text) => {
    try {
      const url = new URL(text);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  },
  { message: 'expected an http:// or https:// URL' },
);

const ACTIONS = ['push', 'pull', 'mount', 'delete'] as const;

const endpoint = z.strictObject({
  name: z.string().min(1),
  disabled: bool.default(false),
  url: httpURL,
  headers: z.record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'expected an HTTP header name'), z.array(z.string())).default({}),
  timeout: duration.prefault('1s'),
  threshold: int(0).default(10),
  backoff: duration.prefault('1s'),
  ignoredmediatypes: z.array(z.string()).default([]),
  ignore: z
    .strictObject({
      mediatypes: z.array(z.string()).default([]),
      actions: z.array(z.enum(ACTIONS)).default([]),
    })
    .prefault({}),
  /** most events held for this endpoint; the oldest beyond it are dropped. Unset: unbounded */
  queuelimit: int(1).optional(),
});

const notifications = z
  .strictObject({
    events: z.strictObject({ includereferences: bool.default(false) }).prefault({}),
    endpoints: z.array(endpoint).default([]),
  })
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    value.endpoints.forEach((e, i) => {
      if (seen.has(e.name)) ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'name'], message: `endpoint name ${JSON.stringify(e.name)} is used twice` });
      seen.add(e.name);
    });
  })
  .prefault({});

const validation = z
  .strictObject({
    disabled: bool.default(false),
    manifests: z
      .strictObject({
        urls: z
          .strictObject({ allow: z.array(pattern).default([]), deny: z.array(pattern).default([]) })
          .prefault({}),
      })
      .prefault({}),
  })
  .prefault({});

const catalog = z.strictObject({ maxentries: int(1).default(1000) }).prefault({});

export const configSchema = z.strictObject({
  version: z.union([z.literal('0.1'), z.literal(0.1)]).transform(() => '0.1' as const),
  log,
  storage,
  http,
  validation,
  catalog,
  notifications,
});

export type Config = z.output<typeof configSchema>;
