// Structured logs: one JSON line per event on stderr (stdout belongs to the MCP stdio protocol and to
// the CLI's answers). Never pass a secret in `fields`.
type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

function threshold(): number {
  const v = (process.env.SITEFLEET_LOG ?? 'info') as Level | 'silent';
  return ORDER[v] ?? ORDER.info;
}

/** Whether a line of this level would be written now (lets a hot path skip building one). */
export function logs(level: Level): boolean {
  return ORDER[level] >= threshold();
}

export function log(level: Level, msg: string, fields: Record<string, unknown> = {}): void {
  if (ORDER[level] < threshold()) return;
  process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), level, msg, ...fields })}\n`);
}
