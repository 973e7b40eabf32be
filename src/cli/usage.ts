/** What `berth help` prints: every command's synopsis and what it does. */

/** one entry per command: its synopsis line and what it does, for `berth help` and `berth <command> --help` */
export const COMMANDS: Record<string, string> = {
  serve: `berth serve [CONFIG.yml]
    run the registry (no file: filesystem storage under ./data on :5000)`,
  config: `berth config check CONFIG.yml
    print the effective configuration (secrets masked), or every error
  berth config schema
    print the configuration's JSON Schema (for editors)`,
  'garbage-collect': `berth garbage-collect [--dry-run] [--delete-untagged] [--quiet] [--retention] CONFIG.yml
    delete the blobs no manifest references (with --delete-untagged, also the manifests no tag
    reaches). Read-only configuration: at once; otherwise safely beside live registries, by online
    collection's protocol (trash, storage.maintenance.gc.delay). --retention first applies
    storage.maintenance.retention.policies (tags and untagged manifests, with delete events)`,
  verify: `berth verify [--repository NAME] [--fix] CONFIG.yml
    check that every blob hashes to its name and every link and manifest reference exists; exit 1
    on damage (leftovers berth leaves on purpose are reported, not counted). --fix moves what is
    provably broken aside (to _berth/verify/quarantine/) and removes old leftover links
  berth verify --index CONFIG.yml
    report every difference between the metadata index and storage; exit 1 if there is any`,
  index: `berth index rebuild CONFIG.yml
    make the metadata index (the metadata block) hold what storage holds, from a walk of storage`,
  replicate: `berth replicate run RULE CONFIG.yml
    one run of the pull rule RULE of replication, now (beside a running registry; a re-run copies
    only what is missing)
  berth replicate status CONFIG.yml
    every replication rule's state as JSON: its figures, its last error, what a push rule is behind`,
  audit: `berth audit export [--since WHEN] [--until WHEN] [--repository R] [--actor A] [--action X] CONFIG.yml
    print the audit log's records as JSON lines, oldest first; WHEN is a duration ago (24h, the
    default for --since) or a time (2026-11-26T00:00:00Z)`,
  token: `berth token create --name NAME --repository GLOB [--repository GLOB] --actions pull,push[,delete] [--expires 90d] CONFIG.yml
    create an API token (a robot account) and print its secret, once: the token's name is the user
    and the secret the password of docker login, podman login and skopeo --creds
  berth token list CONFIG.yml
    every API token: its state, globs, actions, owner, expiry and last use (never its secret)
  berth token revoke NAME CONFIG.yml
    revoke it: every instance refuses it within a few seconds`,
  uploads: `berth uploads purge [--older-than DURATION] [--dry-run] CONFIG.yml
    delete the uploads started longer ago than DURATION (default: storage.maintenance.uploadpurging.age)`,
};

export const USAGE = `usage:
${Object.values(COMMANDS)
  .map((text) => `  ${text.replace(/\n/g, '\n  ')}`)
  .join('\n')}
  berth --version | help [COMMAND]

environment: REGISTRY_CONFIGURATION_PATH names the file; REGISTRY_<KEY_PATH> overrides any key
exit codes: 0 done, 1 failed (configuration, storage, or the command's own failure), 2 bad usage`;
