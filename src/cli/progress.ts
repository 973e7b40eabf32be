/**
 * A progress line for long commands (verify, garbage-collect) on a terminal: rewritten in place on stderr at most
 * every 200 ms; other lines printed through it go above it. Off when stderr is not a terminal, so
 * logs and pipes get only the findings.
 */
export interface Progress {
  /** `done` of `total` (or just `done` when the total is not known) `what`, e.g. "blobs hashed" */
  update(what: string, done: number, total?: number): void;
  /** a finding, on stdout, without garbling the progress line */
  print(line: string): void;
  done(): void;
}

const EVERY_MS = 200;

export function progressLine(stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, print: (line) => console.log(line), done() {} };
  let last = 0;
  let shown = false;
  const clear = () => {
    if (shown) stream.write('\r\x1b[K');
    shown = false;
  };
  return {
    update(what, done, total) {
      const now = Date.now();
      if (now - last < EVERY_MS && done !== total) return;
      last = now;
      const count = total === undefined ? `${done} ${what}` : `${done}/${total} ${what} (${total ? Math.floor((done / total) * 100) : 100}%)`;
      stream.write(`\r\x1b[K${count}`);
      shown = true;
    },
    print(line) {
      clear();
      console.log(line);
    },
    done: clear,
  };
}
