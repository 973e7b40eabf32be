/** The progress line of long commands: rewritten in place on a terminal, findings above it; silent elsewhere. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { progressLine } from '../../src/cli/progress.js';

function fakeStream(isTTY: boolean): NodeJS.WriteStream & { written: string } {
  const stream = { isTTY, written: '', write(text: string) { stream.written += text; return true; } };
  return stream as unknown as NodeJS.WriteStream & { written: string };
}

describe('progress line', () => {
  it('on a terminal: rewrites one line, clears it before a finding and at the end', () => {
    const stream = fakeStream(true);
    const printed: string[] = [];
    const original = console.log;
    console.log = (line: string) => printed.push(line);
    try {
      const progress = progressLine(stream);
      progress.update('blobs hashed', 1, 4);
      progress.update('blobs hashed', 2, 4); // within 200 ms of the last: not drawn
      progress.update('blobs hashed', 4, 4); // the last is always drawn
      progress.print('damaged: something');
      progress.done();
    } finally {
      console.log = original;
    }
    assert.equal(stream.written, '\r\x1b[K1/4 blobs hashed (25%)\r\x1b[K4/4 blobs hashed (100%)\r\x1b[K');
    assert.deepEqual(printed, ['damaged: something']);
  });

  it('without a total: the count alone', async () => {
    const stream = fakeStream(true);
    const progress = progressLine(stream);
    progress.update('repositories marked', 7);
    assert.equal(stream.written, '\r\x1b[K7 repositories marked');
  });

  it('not on a terminal: draws nothing', () => {
    const stream = fakeStream(false);
    const progress = progressLine(stream);
    progress.update('blobs hashed', 1, 1);
    progress.done();
    assert.equal(stream.written, '');
  });
});
