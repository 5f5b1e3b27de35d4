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
