/** The process logger: pino JSON lines (log.formatter json) or one readable line per entry (text). */
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';

/** what the logger needs of `log` in the configuration */
export interface LogOptions {
  level: 'error' | 'warn' | 'info' | 'debug';
  formatter: 'json' | 'text';
  /** fields added to every entry */
  fields?: Record<string, unknown>;
}

export function createLogger(log: LogOptions, destination: NodeJS.WritableStream = process.stdout): Logger {
  const options = { level: log.level, base: { service: 'berth', ...log.fields } };
  if (log.formatter === 'json') return pino(options, destination);
  return pino(options, textLines(destination));
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** turns pino's JSON lines into `time level msg key=value ...` */
function textLines(destination: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const { time, level, msg, pid: _pid, hostname: _host, service: _service, ...fields } = JSON.parse(chunk.toString());
      const rest = Object.entries(fields).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
      destination.write(`${new Date(time).toISOString()} ${LEVELS[level] ?? level} ${msg ?? ''} ${rest.join(' ')}\n`);
      done();
    },
  });
}
