/**
 * The process logger: JSON lines (string levels, ISO times) for log collectors, the same with
 * logstash's field names (logstash), or one readable line per entry (text). Without
 * log.formatter: text on a terminal, JSON anywhere else.
 */
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';

/** what the logger needs of `log` in the configuration */
export interface LogOptions {
  level: 'error' | 'warn' | 'info' | 'debug';
  /** unset: text when the destination is a terminal, else json */
  formatter?: 'json' | 'text' | 'logstash';
  /** fields added to every entry */
  fields?: Record<string, unknown>;
}

export function createLogger(log: LogOptions, destination: NodeJS.WritableStream = process.stdout): Logger {
  const options = {
    level: log.level,
    base: { service: 'berth', ...log.fields },
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const formatter = log.formatter ?? ((destination as { isTTY?: boolean }).isTTY ? 'text' : 'json');
  if (formatter === 'json') return pino(options, destination);
  // Distribution's logstash formatter: "@timestamp", "@version": "1" and "message" instead of time and msg
  if (formatter === 'logstash') return pino({ ...options, messageKey: 'message', timestamp: () => `,"@timestamp":"${new Date().toISOString()}","@version":"1"` }, destination);
  return pino(options, textLines(destination));
}

/** turns pino's JSON lines into `time level msg key=value ...` */
function textLines(destination: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const { time, level, msg, pid: _pid, hostname: _host, service: _service, ...fields } = JSON.parse(chunk.toString());
      const rest = Object.entries(fields).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
      destination.write(`${time} ${level} ${msg ?? ''} ${rest.join(' ')}\n`);
      done();
    },
  });
}
