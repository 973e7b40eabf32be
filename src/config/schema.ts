/**
 * The configuration schema: Distribution's YAML shape, validated with zod. Every value a user can
 * write is declared here with its default; nothing else in berth reads raw configuration.
 * Environment overrides arrive as strings, so booleans, integers and durations also accept strings.
 */
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { REPOSITORY_GLOB } from '../registry/names.js';
import { parseDuration } from './duration.js';

/** Go's strconv.ParseBool spellings, as Distribution reads them (YAML already makes true/True/TRUE booleans) */
const GO_TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'] as const;
const GO_FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'] as const;
const bool = z.union([z.boolean(), z.enum([...GO_TRUE, ...GO_FALSE]).transform((v) => (GO_TRUE as readonly string[]).includes(v))], {
  error: 'expected a boolean (true/false; also 1/0, t/f, True/False as Go accepts them)',
});

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

/** a repository glob (src/registry/names.ts): `**`, `team/*`, `team/app` */
const repositoryGlob = z
  .string()
  .regex(REPOSITORY_GLOB, 'expected a repository glob such as "**", "team/*" or "team/app"');

/** a key Distribution has and berth does not implement yet: refused with a clear message rather than ignored */
const notYet = (what: string) =>
  z
    .unknown()
    .refine((value) => value === undefined, { message: `${what} is not implemented in this version of berth; remove the key` })
    .optional();

/**
 * a Distribution key that has no effect in berth and loses nothing by it (metrics hooks, HTTP/2
 * switches, tuning of Go internals): accepted, and src/config/warnings.ts says once that it is ignored
 */
const harmless = z.unknown().optional();

const listenAddress = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):\d{1,5}$/, 'expected host:port, e.g. "0.0.0.0:5000" or ":5000"');

const filesystemDriver = z.strictObject({
  rootdirectory: z.string().min(1).default('/var/lib/registry'),
  maxthreads: int(25).optional(),
});

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** canned ACLs of S3 objects (objectacl); log-delivery-write is for buckets only */
export const S3_CANNED_ACLS = [
  'private',
  'public-read',
  'public-read-write',
  'authenticated-read',
  'aws-exec-read',
  'bucket-owner-read',
  'bucket-owner-full-control',
] as const;

export const S3_LOG_LEVELS = [
  'off',
  'debug',
  'debugwithsigning',
  'debugwithhttpbody',
  'debugwithrequestretries',
  'debugwithrequesterrors',
  'debugwitheventstreambody',
] as const;

const sizeInRange = (min: number, max: number, what: string) =>
  int(0).refine((n) => n >= min && n <= max, { message: `${what}: expected an integer number of bytes from ${min} to ${max}` });

/** spec table 2.9: the object-storage (S3) driver */
const s3Driver = z
  .strictObject({
    accesskey: z.string().optional(),
    secretkey: z.string().optional(),
    region: z.string({ message: 'required: the region of the bucket, e.g. "us-east-1"' }).min(1, 'required: the region of the bucket'),
    regionendpoint: z
      .string()
      .regex(/^(https?:\/\/)?[A-Za-z0-9.[\]:-]+(:\d+)?\/?$/, 'expected the endpoint of an S3-compatible store, e.g. "http://127.0.0.1:7480" or "minio.example.com:9000"')
      .optional(),
    forcepathstyle: bool.default(false),
    bucket: z.string({ message: 'required: the name of an existing bucket' }).min(1, 'required: the name of an existing bucket'),
    encrypt: bool.default(false),
    keyid: z.string().optional(),
    secure: bool.default(true),
    skipverify: bool.default(false),
    v4auth: bool.default(true),
    chunksize: int(0)
      .refine((n) => n > 5 * MiB && n <= 5 * GiB, { message: `expected a number of bytes greater than ${5 * MiB} (5 MiB, the store's minimum part size) and at most ${5 * GiB} (5 GiB)` })
      .default(10 * MiB),
    multipartcopychunksize: sizeInRange(5 * MiB, 5 * GiB, 'part size of multipart copies').default(32 * MiB),
    multipartcopymaxconcurrency: int(1).pipe(z.number().max(1000, 'at most 1000 parts in flight')).default(100),
    multipartcopythresholdsize: sizeInRange(0, 5 * GiB, 'objects above this size are copied in parts (a single copy is limited to 5 GiB)').default(32 * MiB),
    rootdirectory: z
      .string()
      .regex(/^\/?([A-Za-z0-9._-]+\/)*[A-Za-z0-9._-]*$/, 'expected a key prefix of path components, e.g. "/registry" or "a/b"')
      .default(''),
    storageclass: z.enum(['STANDARD', 'REDUCED_REDUNDANCY'], { message: 'expected STANDARD or REDUCED_REDUNDANCY' }).default('STANDARD'),
    useragent: z.string().optional(),
    usedualstack: bool.optional(),
    accelerate: bool.optional(),
    usefipsendpoint: bool.default(false),
    objectacl: z.enum(S3_CANNED_ACLS, { message: `expected a canned ACL: ${S3_CANNED_ACLS.join(', ')}` }).default('private'),
    loglevel: z.enum(S3_LOG_LEVELS, { message: `expected one of ${S3_LOG_LEVELS.join(', ')}` }).default('off'),
  })
  .superRefine((value, ctx) => {
    if (value.regionendpoint !== undefined && !value.forcepathstyle) {
      ctx.addIssue({
        code: 'custom',
        path: ['forcepathstyle'],
        message: 'must be true when regionendpoint is set (S3-compatible stores are addressed by path, as Distribution 3 requires)',
      });
    }
    if (!value.v4auth) {
      ctx.addIssue({
        code: 'custom',
        path: ['v4auth'],
        message:
          value.region === 'eu-central-1'
            ? 'region eu-central-1 accepts only signature version 4: remove v4auth or set it to true'
            : 'signature version 2 is not implemented by berth (its S3 client signs with version 4 only): remove v4auth or set it to true',
      });
    }
  });

/**
 * berth's retention policies (src/registry/retention/): which tags and untagged manifests go, per
 * repository glob, evaluated every `interval` and by `berth garbage-collect --retention`.
 */
const retentionPolicy = z
  .strictObject({
    repositories: z.array(repositoryGlob).min(1, 'name at least one repository glob, e.g. ["**"] or ["team/*"]'),
    keep: z.strictObject({ newest: int(0).optional(), tags: z.array(pattern).optional() }).default({}),
    delete: z
      .strictObject({ tagsolderthan: duration.optional(), notpulledfor: duration.optional(), untaggedolderthan: duration.optional() })
      .refine((rules) => Object.values(rules).some((ms) => ms !== undefined && ms > 0), {
        message: 'a policy must delete something: set delete.tagsolderthan, delete.notpulledfor or delete.untaggedolderthan (durations above 0)',
      })
      .prefault({}),
  });

const retention = z
  .strictObject({
    enabled: bool.default(false),
    interval: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "24h"' }).prefault('24h'),
    dryrun: bool.default(false),
    policies: z.array(retentionPolicy).default([]),
  })
  .refine((value) => !value.enabled || value.policies.length > 0, { message: 'retention is enabled without policies: add storage.maintenance.retention.policies', path: ['policies'] });

const inmemoryDriver = z.union([z.strictObject({}), z.null(), z.literal('')]).transform(() => ({}));

const storage = z
  .strictObject({
    filesystem: filesystemDriver.optional(),
    inmemory: inmemoryDriver.optional(),
    s3: s3Driver.optional(),
    azure: notYet('the Azure storage driver (storage.azure)'),
    gcs: notYet('the Google Cloud Storage driver (storage.gcs)'),
    delete: z.strictObject({ enabled: bool.default(false) }).default({ enabled: false }),
    redirect: z
      .strictObject({
        disable: bool.default(false),
        /** berth's key: how long a pre-signed redirect URL stays valid (Distribution: fixed 20 minutes) */
        expiry: duration.prefault('20m'),
      })
      .prefault({}),
    /** berth's keys: every single store call is bounded and a slow one logged (src/storage/deadlines.ts) */
    calls: z
      .strictObject({
        /** a call that has not answered by then fails the request with 503 (0: no bound) */
        timeout: duration.prefault('30s'),
        /** a call slower than this is logged as a warning (0: never) */
        slow: duration.prefault('5s'),
      })
      .prefault({}),
    /** the metadata cache (src/registry/cache/directory-cache.ts): always on; these keys bound and share it */
    cache: z
      .strictObject({
        blobdescriptor: z.enum(['inmemory', 'redis'], { message: 'expected inmemory or redis' }).optional(),
        /** Distribution 3's key: entries kept (0: no limit, which berth caps at 1,000,000) */
        blobdescriptorsize: z.number().int().min(0).optional(),
      })
      .optional(),
    tag: z.strictObject({ concurrencylimit: harmless }).optional(),
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
        /** berth's: garbage collection inside the running registry (src/registry/gc/online.ts) */
        gc: z
          .strictObject({
            enabled: bool.default(false),
            interval: duration.prefault('24h'),
            /** how long a blob's upload or last use keeps it; must exceed the longest request */
            delay: duration.prefault('1h'),
            dryrun: bool.default(false),
            /** also delete manifests no tag reaches once they are older than the delay (src/registry/gc/untagged.ts) */
            deleteuntagged: bool.default(false),
          })
          .prefault({}),
        retention: retention.optional(),
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

export const DRIVER_NAMES = ['filesystem', 'inmemory', 's3'] as const;

const log = z
  .strictObject({
    /** default info (or the deprecated top-level loglevel: configSchema's transform) */
    level: z.enum(['error', 'warn', 'info', 'debug']).optional(),
    /** unset: text on a terminal, json elsewhere (src/log.ts) */
    formatter: z.enum(['json', 'text', 'logstash']).optional(),
    accesslog: z.strictObject({ disabled: bool.default(false) }).default({ disabled: false }),
    fields: z.record(z.string(), z.unknown()).optional(),
    hooks: harmless,
    reportcaller: harmless,
  })
  .prefault({});

const http = z
  .strictObject({
    addr: listenAddress.default(':5000'),
    net: z.enum(['tcp'], { message: 'only "tcp" is supported (listening on a unix socket is not implemented)' }).optional(),
    http2: harmless,
    h2c: harmless,
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
    /** berth's: what one client may hold of the server (src/http/limits.ts, docs/security.md) */
    limits: z
      .strictObject({
        /** open connections per process beyond which new ones are refused; auto: 3/4 of the descriptor limit */
        connections: z.union([z.literal('auto'), int(1)]).default('auto'),
        /** of those, how many one client address may hold; auto: half (behind one load balancer: raise it to `connections`) */
        connectionsperaddress: z.union([z.literal('auto'), int(1)]).default('auto'),
        /** a request line and its headers must have arrived within this (and a TLS handshake) */
        headertimeout: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "20s"' }).prefault('20s'),
        /** a kept-alive connection without a request is closed after this */
        idletimeout: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "75s"' }).prefault('75s'),
        /** a request body that brings fewer than `minimum` bytes per second over `window` is cut (0: no minimum) */
        bodyrate: z
          .strictObject({
            minimum: int(0).default(1024),
            window: duration.refine((ms) => ms >= 1000, { message: 'expected a duration of at least 1s, e.g. "20s"' }).prefault('20s'),
          })
          .prefault({}),
      })
      .prefault({}),
    /** berth's: worker processes on one port (src/workers/); `auto`: one per core */
    workers: z.union([z.literal('auto').transform(() => availableParallelism()), int(1)]).default(1),
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
    tls: z
      .strictObject({
        // required unless letsencrypt is set, which is refused first (not two errors about files it would have replaced)
        certificate: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
        clientcas: z.array(z.string().min(1)).optional(),
        minimumtls: z.enum(['tls1.2', 'tls1.3']).default('tls1.2'),
        letsencrypt: notYet("Let's Encrypt (http.tls.letsencrypt)"),
        clientauth: notYet('choosing the client certificate mode (http.tls.clientauth; with clientcas berth requires and verifies a client certificate)'),
      })
      .superRefine((tls, ctx) => {
        if (tls.letsencrypt !== undefined) return;
        for (const key of ['certificate', 'key'] as const) {
          if (tls[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required: the path of the PEM ${key} file (http.tls serves HTTPS from a certificate and its key)` });
        }
      })
      .transform((tls) => tls as typeof tls & { certificate: string; key: string })
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

/** the `action` of a notification event */
const EVENT_ACTIONS = ['push', 'pull', 'mount', 'delete'] as const;

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
      actions: z.array(z.enum(EVENT_ACTIONS)).default([]),
    })
    .prefault({}),
  /** most events held for this endpoint; the oldest beyond it are dropped. Unset: unbounded */
  queuelimit: int(1).optional(),
  /** the body: Distribution's envelope, or one CloudEvent 1.0 per request (structured mode) */
  format: z.enum(['distribution', 'cloudevents'], { message: 'expected distribution or cloudevents' }).default('distribution'),
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
        indexes: notYet('checking the platforms of pushed indexes (validation.manifests.indexes)'),
      })
      .prefault({}),
  })
  .prefault({});

/** spec 2.10: the content-delivery middleware; options are checked again (key file) when the app starts */
const cloudfrontOptions = z.strictObject({
  baseurl: z.url({ message: 'expected the absolute URL of the distribution, e.g. "https://d111111abcdef8.cloudfront.net/"' }),
  privatekey: z.string().min(1, 'expected the path of the PEM file holding the RSA private key'),
  keypairid: z.string().min(1, 'expected the key pair id'),
  duration: duration.prefault('20m'),
  ipfilteredby: z.enum(['none', 'aws', 'awsregion'], { message: 'expected none, aws or awsregion' }).default('none'),
  awsregion: z.string().optional(),
  updatefrequency: duration.prefault('12h'),
  iprangesurl: z.string().min(1).default('https://ip-ranges.amazonaws.com/ip-ranges.json'),
}).superRefine((value, ctx) => {
  if (value.ipfilteredby === 'awsregion' && !value.awsregion?.trim()) {
    ctx.addIssue({ code: 'custom', path: ['awsregion'], message: 'required with ipfilteredby: awsregion (a comma-separated list of regions)' });
  }
});

const storageMiddleware = z.discriminatedUnion(
  'name',
  [z.strictObject({ name: z.literal('cloudfront'), options: cloudfrontOptions })],
  { message: 'expected {name: cloudfront, options: {...}}: cloudfront is the only storage middleware berth implements' },
);

const middleware = z
  .strictObject({
    storage: z.array(storageMiddleware).default([]),
    registry: notYet('registry middleware (middleware.registry)'),
    repository: notYet('repository middleware (middleware.repository)'),
  })
  .prefault({});

const catalog = z.strictObject({ maxentries: int(1).default(1000) }).prefault({});

/** berth's own: the web interface under /ui/ on the main port (docs/configuration.md "Web interface") */
const ui = z.strictObject({ enabled: bool.default(true) }).prefault({});

/**
 * Distribution's compatibility.schema1: `enabled` says whether first-generation (signed) manifests
 * may be pushed. berth accepts them unless told otherwise, where Distribution 2.8 refuses them:
 * docs/decisions.md, "Hardening". `signingkeyfile` signs manifests Distribution converts to
 * schema1 for old clients; berth never converts (warnings.ts says so).
 */
const compatibility = z
  .strictObject({ schema1: z.strictObject({ enabled: bool.default(true), signingkeyfile: harmless }).prefault({}) })
  .prefault({});

/** what auth.access grants */
const ACCESS_ACTIONS = ['pull', 'push', 'delete'] as const;

/** berth's own access rules: repository glob -> subject (`*`, `anonymous`, `group:NAME` or a user name) -> actions */
const access = z
  .record(repositoryGlob, z.record(z.string().min(1), z.array(z.enum(ACCESS_ACTIONS))))
  .superRefine((rules, ctx) => {
    for (const [glob, subjects] of Object.entries(rules)) {
      for (const subject of Object.keys(subjects)) {
        if (!/^(group:[^:\s]+|[^:\s]+)$/.test(subject)) {
          ctx.addIssue({ code: 'custom', path: [glob, subject], message: 'expected a subject: a user name, "*", "anonymous" or "group:NAME" (no spaces; ":" only after "group")' });
        }
      }
    }
  });

const htpasswd = z.strictObject({
  realm: z.string().min(1).default('berth'),
  path: z.string().min(1),
});

/** the built-in token issuer (berth's own; Distribution needs an external one) */
const tokenIssuer = z.strictObject({
  name: z.string().min(1).optional(),
  enabled: bool.default(false),
  signingkey: z.string().min(1).optional(),
  expiration: duration.prefault('5m'),
  refreshexpiration: duration.prefault('168h'),
});

const token = z
  .strictObject({
    realm: z.url({ message: 'expected the absolute URL of the token service, e.g. "https://auth.example.com/token"' }).optional(),
    service: z.string().min(1),
    /** Distribution: the expected `iss` as a string; berth also takes {name, enabled, signingkey, ...} */
    issuer: z.union([z.string().min(1).transform((name) => ({ name, enabled: false, expiration: 300_000, refreshexpiration: 604_800_000, signingkey: undefined })), tokenIssuer]),
    rootcertbundle: z.string().min(1).optional(),
    jwks: z.string().min(1).optional(),
    signingalgorithms: notYet('restricting token signing algorithms (auth.token.signingalgorithms; berth accepts RS256, ES256 and EdDSA as its keys allow)'),
    autoredirect: bool.default(false),
    autoredirectpath: z.string().regex(/^\//, 'expected a path starting with "/"').default('/auth/token'),
  })
  .superRefine((value, ctx) => {
    const issuer = value.issuer;
    if (!issuer.name) ctx.addIssue({ code: 'custom', path: ['issuer', 'name'], message: 'the issuer name (the `iss` of every token) is required' });
    if (issuer.enabled && !issuer.signingkey) ctx.addIssue({ code: 'custom', path: ['issuer', 'signingkey'], message: 'the built-in issuer needs a signing key: the path of a PEM private key (RSA, EC P-256 or Ed25519)' });
    if (!issuer.enabled && !value.rootcertbundle && !value.jwks) {
      ctx.addIssue({ code: 'custom', message: 'tokens need a trusted key: set rootcertbundle or jwks, or enable the built-in issuer' });
    }
    if (!value.realm && !value.autoredirect) ctx.addIssue({ code: 'custom', path: ['realm'], message: 'the realm (URL of the token service) is required unless autoredirect is true' });
  });

/** an https URL, or plain http to a loopback address (tests): a key or a provider reached over plain http elsewhere could be anyone */
function secureOrLoopback(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(parsed.hostname));
}

/** the signing algorithms a federated issuer may use (asymmetric only: never `none` or HMAC) */
const FEDERATION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'] as const;

/** a claim by name, or a path into nested claims with `/` (`kubernetes.io/namespace`) */
const claimPath = z.string().regex(/^[A-Za-z0-9_.:-]+(\/[A-Za-z0-9_.:-]+)*$/, 'expected a claim name such as "repository", or a path such as "kubernetes.io/namespace"');

/** a repository glob in which `{{claim}}` stands for a claim's value */
const federatedGlob = z.string().refine((glob) => repositoryGlob.safeParse(glob.replace(/\{\{[A-Za-z0-9_.:\/-]+\}\}/g, 'x')).success, {
  message: 'expected a repository glob such as "acme/*", "ci/**" or "{{repository}}" (a claim in double braces)',
});

/** auth.federation[].rules[]: the claims a token must carry -> what it may do where (src/auth/federation-rules.ts) */
const federationRule = z.strictObject({
  claims: z
    .record(claimPath, z.union([z.string().min(1), z.number(), z.boolean()]).transform(String))
    .refine((claims) => Object.keys(claims).length > 0, {
      message: 'a rule needs at least one claim (e.g. repository or sub): without one it would admit every token of the issuer',
    }),
  repositories: z.array(federatedGlob).min(1),
  actions: z.array(z.enum(ACCESS_ACTIONS)).min(1),
});

/** auth.federation[]: an external issuer whose JWTs are accepted as passwords (CI, Kubernetes) */
const federatedIssuer = z
  .strictObject({
    /** the readable prefix of the user name, `<name>:<sub>`; default the issuer's host */
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a short name such as "github" (letters, digits, ".", "_", "-")').optional(),
    issuer: z.string().min(1),
    jwksuri: z
      .url({ message: 'expected the URL of the issuer\'s JWKS, e.g. "https://token.actions.githubusercontent.com/.well-known/jwks"' })
      .refine(secureOrLoopback, {
        message: 'the keys must come over https (plain http only from 127.0.0.1, [::1] or localhost): anyone on the path could otherwise sign tokens',
      })
      .optional(),
    jwks: z.string().min(1).optional(),
    audience: z.string().min(1),
    algorithms: z.array(z.enum(FEDERATION_ALGORITHMS)).min(1).default([...FEDERATION_ALGORITHMS]),
    rules: z.array(federationRule).min(1),
  })
  .superRefine((value, ctx) => {
    if ((value.jwksuri === undefined) === (value.jwks === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['jwksuri'], message: 'set one of jwksuri (fetched and cached) and jwks (the path of a JWKS file)' });
    }
  })
  .transform(({ name, ...rest }) => ({ ...rest, name: name ?? issuerHost(rest.issuer) }));

/** `https://token.actions.githubusercontent.com` -> `token.actions.githubusercontent.com`; other issuers as they are */
function issuerHost(issuer: string): string {
  try {
    return new URL(issuer).host || issuer;
  } catch {
    return issuer;
  }
}

const federation = z.array(federatedIssuer).min(1).superRefine((issuers, ctx) => {
  for (const key of ['issuer', 'name'] as const) {
    const seen = new Set<string>();
    issuers.forEach((issuer, i) => {
      if (seen.has(issuer[key])) ctx.addIssue({ code: 'custom', path: [i, key], message: `${key} ${JSON.stringify(issuer[key])} appears twice: each issuer once` });
      seen.add(issuer[key]);
    });
  }
});

/** the web interface's single sign-on through an OpenID Provider (src/auth/oidc/) */
const oidc = z
  .strictObject({
    issuer: z.url({ message: 'expected the issuer URL of the OpenID Provider, e.g. "https://id.example.com/realms/acme"' }).refine(secureOrLoopback, {
      message: 'the issuer must be an https URL (plain http only on a loopback address such as 127.0.0.1, for tests)',
    }),
    clientid: z.string().min(1),
    clientsecret: z.string().min(1).optional(),
    clientsecretfile: z.string().min(1).optional(),
    scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'expected a scope name such as "openid" or "groups"')).default(['openid', 'profile', 'email']),
    userclaim: z.string().min(1).default('preferred_username'),
    groupsclaim: z.string().min(1).default('groups'),
    redirecturl: z.url({ message: 'expected the absolute URL the provider sends the browser back to, ending in /ui/callback' }).optional(),
    sessionlifetime: duration.prefault('8h'),
    groupsrefresh: duration.prefault('5m'),
  })
  .superRefine((value, ctx) => {
    if ((value.clientsecret === undefined) === (value.clientsecretfile === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['clientsecret'], message: 'set one of clientsecret and clientsecretfile (the secret the provider gave this client)' });
    }
    if (!value.scopes.includes('openid')) ctx.addIssue({ code: 'custom', path: ['scopes'], message: 'the scopes must include "openid"' });
    if (value.redirecturl !== undefined && !new URL(value.redirecturl).pathname.endsWith('/ui/callback')) {
      ctx.addIssue({ code: 'custom', path: ['redirecturl'], message: 'the redirect URL must be the registry\'s /ui/callback (with http.prefix before /ui), e.g. "https://registry.example.com/ui/callback"' });
    }
    if (value.sessionlifetime <= 0) ctx.addIssue({ code: 'custom', path: ['sessionlifetime'], message: 'expected a duration above 0, e.g. "8h"' });
    if (value.groupsrefresh <= 0) ctx.addIssue({ code: 'custom', path: ['groupsrefresh'], message: 'expected a duration above 0, e.g. "5m"' });
  });

const auth = z
  .strictObject({
    htpasswd: htpasswd.optional(),
    token: token.optional(),
    oidc: oidc.optional(),
    access: access.optional(),
    /** berth's: JWTs of external issuers accepted as Basic passwords (src/auth/federation.ts) */
    federation: federation.optional(),
    /** berth's: failed logins allowed at once per user and per address, and one more every `every` (src/auth/login-guard.ts); burst 0: no limit */
    failedlogins: z.strictObject({ burst: int(0).default(10), every: duration.prefault('6s') }).prefault({}),
    silly: notYet('auth.silly'),
  })
  .superRefine((value, ctx) => {
    if (value.token && value.htpasswd && !value.token.issuer.enabled) {
      ctx.addIssue({ code: 'custom', message: 'configure one of htpasswd and token; both only with the built-in token issuer (auth.token.issuer.enabled), which checks passwords against auth.htpasswd' });
    }
    if (value.token?.issuer.enabled && !value.htpasswd) {
      ctx.addIssue({ code: 'custom', path: ['htpasswd'], message: 'the built-in token issuer checks passwords against auth.htpasswd: set auth.htpasswd.path' });
    }
    if (value.federation && !value.htpasswd) {
      ctx.addIssue({ code: 'custom', path: ['federation'], message: 'a federated JWT is the password of a Basic login: set auth.htpasswd (its file may hold no user)' });
    }
    if (value.oidc && !value.htpasswd && !value.token) {
      ctx.addIssue({ code: 'custom', path: ['oidc'], message: 'auth.oidc signs people into the web interface; registry clients still need auth.htpasswd or auth.token' });
    }
    if (value.access && !value.htpasswd && !value.token) {
      ctx.addIssue({ code: 'custom', path: ['access'], message: 'auth.access needs an authentication method: auth.htpasswd or auth.token with the built-in issuer' });
    }
  });

/**
 * Redis, in Distribution 2.8's shape (addr, pool, tls.enabled) and v3's (addrs, pool and retry
 * knobs inline, tls with files). One server: berth keeps one multiplexed connection, so the pool
 * knobs are accepted and ignored (warnings.ts says so).
 */
const redisPoolKnobs = Object.fromEntries(
  ['pool', 'poolsize', 'pooltimeout', 'poolfifo', 'minidleconns', 'maxidleconns', 'maxactiveconns', 'connmaxidletime', 'connmaxlifetime', 'maxretries', 'minretrybackoff', 'maxretrybackoff', 'contexttimeoutenabled', 'protocol', 'disableidentity', 'identitysuffix', 'unstableresp3'].map((key) => [key, harmless]),
);
export const REDIS_IGNORED_KEYS = Object.keys(redisPoolKnobs);
const redis = z
  .strictObject({
    addr: listenAddress.optional(),
    addrs: z.array(listenAddress).min(1).optional(),
    clientname: z.string().min(1).optional(),
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    db: int(0).default(0),
    dialtimeout: duration.prefault('5s'),
    readtimeout: duration.prefault('5s'),
    writetimeout: duration.prefault('5s'),
    tls: z
      .strictObject({
        /** Distribution 2.8: TLS with the system's CAs */
        enabled: bool.optional(),
        certificate: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
        rootcas: z.array(z.string().min(1)).optional(),
      })
      .optional(),
    mastername: notYet('Redis Sentinel (redis.mastername)'),
    sentinelusername: notYet('Redis Sentinel (redis.sentinelusername)'),
    sentinelpassword: notYet('Redis Sentinel (redis.sentinelpassword)'),
    readonly: notYet('Redis cluster replicas (redis.readonly)'),
    routebylatency: notYet('Redis cluster routing (redis.routebylatency)'),
    routerandomly: notYet('Redis cluster routing (redis.routerandomly)'),
    maxredirects: notYet('Redis cluster (redis.maxredirects)'),
    ...redisPoolKnobs,
  })
  .transform((value, ctx) => {
    const addrs = value.addrs ?? (value.addr ? [value.addr] : []);
    if (addrs.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: addrs.length === 0 ? 'set redis.addr (or redis.addrs: [host:port])' : 'one Redis server only: several addresses (a cluster) are not implemented yet',
      });
      return z.NEVER;
    }
    if ((value.tls?.certificate === undefined) !== (value.tls?.key === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'set both redis.tls.certificate and redis.tls.key (a client certificate), or neither' });
      return z.NEVER;
    }
    return { ...value, addr: addrs[0] };
  });

/**
 * proxy: the registry is a pull-through cache of `remoteurl` (Distribution's keys). Cached content
 * not fetched or pulled for `ttl` is removed (src/registry/expiry/); 0 keeps it forever.
 */
const remoteurl = z
  .url({ protocol: /^https?$/, message: 'expected the http(s) URL of the upstream registry, e.g. "https://registry-1.docker.io"' })
  .refine((url) => !new URL(url).username && !new URL(url).password, {
    message: 'put the credentials in username and password (or passwordfile), not in the URL (they would show in logs)',
  });

/** a host the upstream may send the cache to: `host` (any port), `host:port` or `*.domain` */
const allowedHost = z
  .string()
  .regex(/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/, 'expected a host name, host:port or *.domain, e.g. "auth.example.com" or "cdn.example.net:8443"');

/** an upstream's credentials and cache lifetime, for the single `proxy` and each of `proxy.upstreams` */
const upstreamKeys = {
  username: z.string().min(1).optional(),
  password: z.string().min(1).optional(),
  /** the password in a file (a secret mounted by an orchestrator), read at start */
  passwordfile: z.string().min(1).optional(),
  /** how long cached content stays after it was last fetched or pulled; unset: 168h (Distribution's default); 0: forever */
  ttl: duration.optional(),
  /** token realm hosts besides the upstream's own and its domain's (proxy/hosts.ts): they get the credentials */
  realmhosts: z.array(allowedHost).optional(),
  /** hosts besides the upstream's own and its domain's that blob downloads may be redirected to (a CDN) */
  redirecthosts: z.array(allowedHost).optional(),
};

function checkCredentials(value: { username?: string; password?: string; passwordfile?: string }, ctx: z.RefinementCtx, where: string): void {
  if (value.password !== undefined && value.passwordfile !== undefined) {
    ctx.addIssue({ code: 'custom', message: `${where}: set password or passwordfile, not both` });
  }
  if ((value.username === undefined) !== (value.password === undefined && value.passwordfile === undefined)) {
    ctx.addIssue({ code: 'custom', message: `${where}: set username with password (or passwordfile) for basic or token credentials, or neither (anonymous pulls)` });
  }
}

/** a mirror prefix: one or more repository-name components, e.g. "dockerhub" or "mirrors/ghcr" */
const mirrorPrefix = z
  .string()
  .regex(/^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/, 'expected repository-name components such as "dockerhub" or "mirrors/ghcr"');

/**
 * proxy: a pull-through cache. Distribution's single `remoteurl` makes the whole registry a
 * mirror; berth's `upstreams` mirror several registries, each under a repository prefix, beside
 * ordinary private repositories.
 */
const proxy = z
  .strictObject({
    remoteurl: remoteurl.optional(),
    ...upstreamKeys,
    exec: notYet('credentials from a helper command (proxy.exec; use username with password or passwordfile)'),
    upstreams: z.array(z.strictObject({ prefix: mirrorPrefix, remoteurl, ...upstreamKeys })).min(1).optional(),
  })
  .superRefine((value, ctx) => {
    if ((value.remoteurl === undefined) === (value.upstreams === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'set proxy.remoteurl (the whole registry mirrors one upstream) or proxy.upstreams (mirrors under repository prefixes), not both or neither' });
      return;
    }
    if (value.upstreams) {
      for (const key of ['username', 'password', 'passwordfile', 'ttl', 'realmhosts', 'redirecthosts'] as const) {
        if (value[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `with proxy.upstreams, set ${key} on each upstream` });
      }
      value.upstreams.forEach((upstream, i) => {
        checkCredentials(upstream, ctx, `proxy.upstreams.${i}`);
        for (const other of value.upstreams!.slice(0, i)) {
          const [a, b] = [`${other.prefix}/`, `${upstream.prefix}/`];
          if (a.startsWith(b) || b.startsWith(a)) {
            ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'prefix'], message: `prefix ${upstream.prefix} overlaps ${other.prefix}: every repository must belong to one mirror at most` });
          }
        }
      });
    } else {
      checkCredentials(value, ctx, 'proxy');
    }
  });

/**
 * replication: rules that copy content between berth and other registries on purpose
 * (src/replication/). A rule pulls from a remote registry (on `interval`, or once with
 * `berth replicate run`) or pushes every local push (and, with `deletes`, every delete) to it.
 */
const replicationRemote = z.strictObject({
  url: remoteurl,
  username: upstreamKeys.username,
  password: upstreamKeys.password,
  passwordfile: upstreamKeys.passwordfile,
  realmhosts: upstreamKeys.realmhosts,
  redirecthosts: upstreamKeys.redirecthosts,
});

/** an index's child kept by a pull rule: `os/architecture` or `os/architecture/variant` */
const platform = z.string().regex(/^[a-z0-9]+\/[a-z0-9_]+(\/[a-z0-9]+)?$/, 'expected a platform such as "linux/amd64" or "linux/arm64/v8"');

const replicationRule = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'expected a rule name of lowercase letters, digits, "-" and "_", e.g. "upstream-lib"'),
    pull: replicationRemote.optional(),
    push: replicationRemote.optional(),
    repositories: z.array(repositoryGlob).min(1, 'name at least one repository glob, e.g. ["**"] or ["lib/*"]'),
    /** regular expressions a tag must match (any of them); unset: every tag */
    tags: z.array(pattern).min(1).optional(),
    /** pull only: the children of an index to copy (the others are left out); unset: every child */
    platforms: z.array(platform).min(1).optional(),
    /** pull only: how often the rule runs; unset: only `berth replicate run` */
    interval: duration.refine((ms) => ms >= 1000, { message: 'expected a duration of at least 1s, e.g. "1h"' }).optional(),
    /** push only: a local delete deletes the manifest on the remote too */
    deletes: bool.default(false),
    /** requests at once against the remote (pull: repositories and blobs copied at once) */
    concurrency: int(1).default(8),
    onlysigned: bool
      .default(false)
      .refine((on) => !on, { message: 'onlysigned needs the signature policy, which this version of berth does not have yet: remove onlysigned (or set it to false) to replicate every matching image' }),
  })
  .superRefine((rule, ctx) => {
    if ((rule.pull === undefined) === (rule.push === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a rule sets pull (copy from the remote into berth) or push (copy local pushes to the remote), not both or neither' });
      return;
    }
    const remote = (rule.pull ?? rule.push)!;
    checkCredentials(remote, ctx, rule.pull ? 'pull' : 'push');
    if (rule.push && rule.interval !== undefined) ctx.addIssue({ code: 'custom', path: ['interval'], message: 'interval is for pull rules: a push rule sends each local push as it happens' });
    if (rule.push && rule.platforms !== undefined) ctx.addIssue({ code: 'custom', path: ['platforms'], message: 'platforms is for pull rules: a push rule sends what was pushed, whole' });
    if (rule.pull && rule.deletes) ctx.addIssue({ code: 'custom', path: ['deletes'], message: 'deletes is for push rules: a pull rule never deletes' });
  });

const replication = z.array(replicationRule).superRefine((rules, ctx) => {
  rules.forEach((rule, i) => {
    if (rules.slice(0, i).some((other) => other.name === rule.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `rule name ${rule.name} is used twice: each rule needs its own name` });
  });
});

/** berth's own: a token bucket per client */
const ratelimit = z.strictObject({
  rate: z.union([z.number(), z.string().regex(/^\d+(\.\d+)?$/).transform(Number)]).pipe(z.number().positive('expected requests per second, above 0')),
  burst: int(1),
  by: z.enum(['ip', 'user']).default('ip'),
});

/**
 * Distribution's health checks. While one fails, every request answers 503 UNAVAILABLE (as
 * Distribution's health handler does) and /readyz says why. Timeouts default to 3s where
 * Distribution waits without end (a hung check would never report).
 */
const checkTimeout = duration.prefault('3s');
const checkInterval = duration.prefault('10s');
const health = z.strictObject({
  storagedriver: z
    .strictObject({ enabled: bool.default(false), interval: checkInterval, threshold: int(0).default(0), timeout: checkTimeout })
    .optional(),
  file: z.array(z.strictObject({ file: z.string().min(1), interval: checkInterval })).default([]),
  http: z
    .array(
      z.strictObject({
        uri: httpURL,
        headers: z.record(z.string(), z.array(z.string())).default({}),
        statuscode: int(100).default(200),
        timeout: checkTimeout,
        interval: checkInterval,
        threshold: int(0).default(0),
      }),
    )
    .default([]),
  tcp: z.array(z.strictObject({ addr: listenAddress, timeout: checkTimeout, interval: checkInterval, threshold: int(0).default(0) })).default([]),
});

/**
 * metadata: the index of repositories, manifests, tags and blobs (src/metadata/), which answers the
 * catalog and the tag lists. Without the block: on with filesystem storage (embedded SQLite at
 * `<rootdirectory>/berth/metadata.sqlite`), off on other storage (see the transform below). With
 * it: on unless `enabled: false`, embedded SQLite (`sqlite.path`, required but on the filesystem)
 * or PostgreSQL.
 */
const metadata = z
  .strictObject({
    enabled: bool.default(true),
    sqlite: z.strictObject({ path: z.string().min(1).optional() }).optional(),
    /** the reconciler (src/registry/indexing/reconcile.ts): a pass over storage every interval, by one instance */
    // no default filled in here (features/metadata.ts has it): the validated block stays one a configuration file can hold
    reconcile: z.strictObject({ interval: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "1m"' }).optional() }).optional(),
    postgres: z
      .strictObject({
        url: z.string().regex(/^postgres(ql)?:\/\/\S+$/, 'expected a PostgreSQL connection URL, e.g. "postgres://berth:secret@db.example:5432/berth"'),
        // unset: metadata/open.ts's POSTGRES_DEFAULTS (10 connections, 10s, 60s)
        poolsize: int(1).optional(),
        connecttimeout: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "10s"' }).optional(),
        /** "0s": no limit */
        statementtimeout: duration.optional(),
      })
      .optional(),
  })
  .refine((m) => !(m.sqlite && m.postgres), { message: 'choose one engine: metadata.sqlite or metadata.postgres, not both' });

/** a number of bytes: an integer, or a figure with a binary unit ("50GiB", "512MiB") */
const byteCount = z.union([
  int(0),
  z.string().regex(/^\d+(\.\d+)?\s*(B|KiB|MiB|GiB|TiB)$/, 'expected a number of bytes such as 53687091200 or "50GiB" (units B, KiB, MiB, GiB, TiB)').transform((text) => {
    const [, figure, unit] = /^(\d+(?:\.\d+)?)\s*(\w+)$/.exec(text)!;
    const units: Record<string, number> = { B: 1, KiB: 1024, MiB: MiB, GiB: GiB, TiB: 1024 * GiB };
    return Math.floor(Number(figure) * units[unit]);
  }),
]);

/** a tag glob of policies.immutabletags: `*` for any run of characters, a leading `!` excludes */
const tagGlob = z.string().regex(/^!?[A-Za-z0-9_.*-]{1,128}$/, 'expected a tag glob such as "v*" or "!v*-rc*"');

/**
 * policies: what a push may do (src/policies/), matched by repository glob. Per aspect
 * (immutabletags, signatures) the most specific policy that sets it decides, as in auth.access;
 * every quota whose globs match a repository holds, each over all the repositories its globs match.
 */
const policy = z
  .strictObject({
    repositories: z.array(repositoryGlob).min(1),
    immutabletags: z.array(tagGlob).min(1).optional(),
    quota: z
      .strictObject({ bytes: byteCount.optional(), repositories: int(1).optional() })
      .refine((q) => q.bytes !== undefined || q.repositories !== undefined, { message: 'a quota needs bytes, repositories or both' })
      .optional(),
    signatures: z
      .strictObject({
        require: bool.default(false),
        cosign: z.strictObject({ keys: z.array(z.string().min(1)).min(1) }),
      })
      .optional(),
  })
  .refine((p) => p.immutabletags !== undefined || p.quota !== undefined || p.signatures !== undefined, {
    message: 'a policy needs at least one of immutabletags, quota and signatures',
  });

/**
 * audit: the audit log (src/audit/), kept in the metadata index's database. Without the block:
 * on whenever the index is on; with it and the index off, refused (the log has nowhere to go).
 */
const audit = z.strictObject({
  enabled: bool.default(true),
  /** records older than this are deleted by a daily pass (one instance) */
  retention: duration.refine((ms) => ms > 0, { message: 'expected a duration above 0, e.g. "2160h" (90 days)' }).prefault('2160h'),
  /** the users who may read the log in the web interface; unset: everyone without authentication, nobody with it */
  readers: z.array(z.string().min(1)).optional(),
});

export const configSchema = z.strictObject({
  version: z.union([z.literal('0.1'), z.literal(0.1)]).transform(() => '0.1' as const),
  /** Distribution's deprecated spelling of log.level */
  loglevel: z.enum(['error', 'warn', 'info', 'debug']).optional(),
  reporting: harmless,
  log,
  storage,
  http,
  validation,
  catalog,
  compatibility,
  notifications,
  auth: auth.optional(),
  tags: notYet('a limit on tags per repository (tags.maxtags)'),
  redis: redis.optional(),
  ratelimit: ratelimit.optional(),
  health: health.optional(),
  proxy: proxy.optional(),
  middleware,
  ui,
  metadata: metadata.optional(),
  replication: replication.optional(),
  policies: z.array(policy).optional(),
  audit: audit.optional(),
})
  .refine((c) => c.http.workers === 1 || c.ratelimit === undefined || c.redis !== undefined, {
    message: 'with several workers each would keep its own buckets, allowing workers × rate: set redis (the buckets are then shared), or http.workers: 1',
    path: ['ratelimit'],
  })
  .refine((c) => c.storage.cache?.blobdescriptor !== 'redis' || c.redis !== undefined, {
    message: 'redis shares the metadata cache through the Redis server of the redis block: set redis.addr, or use inmemory',
    path: ['storage', 'cache', 'blobdescriptor'],
  })
  .refine((c) => !c.metadata?.enabled || c.metadata.postgres !== undefined || c.metadata.sqlite?.path !== undefined || c.storage.filesystem !== undefined, {
    message: 'set the file of the metadata database (the default, <rootdirectory>/berth/metadata.sqlite, needs filesystem storage), or metadata.postgres.url',
    path: ['metadata', 'sqlite', 'path'],
  })
  .refine((c) => !c.audit?.enabled || (c.metadata ? c.metadata.enabled : c.storage.filesystem !== undefined), {
    message: 'the audit log is kept in the metadata index\'s database, which is off: turn the index on (metadata.enabled: true, metadata.postgres for several instances) or set audit.enabled: false',
    path: ['audit'],
  })
  // Distribution reads the deprecated top-level loglevel when log.level is not set
  .transform(({ log, ...rest }) => ({
    ...rest,
    log: { ...log, level: log.level ?? rest.loglevel ?? ('info' as const) },
    // no block: the index is on with filesystem storage (its file in the root), off elsewhere (an
    // SQLite file per instance on a shared bucket would list only that instance's writes)
    metadata: rest.metadata ?? { enabled: rest.storage.filesystem !== undefined },
  }));

export type Config = z.output<typeof configSchema>;
