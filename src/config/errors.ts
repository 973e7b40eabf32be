/** A configuration that cannot run: every problem with its full key path. */
export class ConfigError extends Error {
  constructor(readonly problems: string[], readonly source: string) {
    super(`invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}
