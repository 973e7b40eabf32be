import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';

/** a destination that keeps what the logger wrote */
function sink(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('createLogger', () => {
  it('json: one pino line per entry with the configured fields', () => {
    const out = sink();
    createLogger({ level: 'info', formatter: 'json', fields: { environment: 'test' } }, out.stream).info({ repo: 'a/b' }, 'pushed');
    const entry = JSON.parse(out.text());
    assert.equal(entry.msg, 'pushed');
    assert.equal(entry.level, 'info');
    assert.match(entry.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(entry.service, 'berth');
    assert.equal(entry.environment, 'test');
    assert.equal(entry.repo, 'a/b');
  });

  it('text: time, level, message, then every field as key=JSON', () => {
    const out = sink();
    createLogger({ level: 'info', formatter: 'text' }, out.stream).warn({ repo: 'a/b', n: 2, ok: true }, 'slow');
    assert.match(out.text(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z warn slow repo="a\/b" n=2 ok=true\n$/);
  });

  it('without a formatter: text on a terminal, JSON elsewhere', () => {
    const terminal = Object.assign(sink(), {});
    (terminal.stream as unknown as { isTTY: boolean }).isTTY = true;
    createLogger({ level: 'info' }, terminal.stream).info({ port: 5000 }, 'listening');
    assert.match(terminal.text(), /^\S+Z info listening port=5000\n$/);
    const pipe = sink();
    createLogger({ level: 'info' }, pipe.stream).info({ port: 5000 }, 'listening');
    assert.equal(JSON.parse(pipe.text()).msg, 'listening');
  });

  it('drops entries below the level', () => {
    const out = sink();
    createLogger({ level: 'warn', formatter: 'text' }, out.stream).info('hidden');
    assert.equal(out.text(), '');
  });
});
