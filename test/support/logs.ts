// Test support: what the server logs (JSON lines on stderr) while a piece of test code runs, at every level.
export async function captureLogs(fn: () => Promise<void>): Promise<string> {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  const level = process.env.SITEFLEET_LOG;
  process.env.SITEFLEET_LOG = 'debug';
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    lines.push(String(chunk));
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    process.stderr.write = write;
    if (level === undefined) delete process.env.SITEFLEET_LOG;
    else process.env.SITEFLEET_LOG = level;
  }
  return lines.join('');
}

/** Resolves with the first log line (at the level the process logs) that matches `pattern`, once it is written. */
export function logged(pattern: RegExp, ms = 20_000): Promise<string> {
  const write = process.stderr.write;
  return new Promise<string>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      process.stderr.write = write;
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no log line matched ${pattern} within ${ms} ms`));
    }, ms);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      const line = String(chunk);
      if (pattern.test(line)) {
        done();
        resolve(line);
      }
      return write.call(process.stderr, chunk, ...rest);
    }) as typeof process.stderr.write;
  });
}
