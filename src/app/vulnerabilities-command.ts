// `sitefleet vulnerabilities import FILE [--source wordfence|wpvulnerability]`: load a feed from a file (the Wordfence
// download, streamed) or from WPVulnerability answers (one file, or a directory of plugin-<slug>.json,
// theme-<slug>.json, core-<version>.json), then match the fleet against it. A refused feed keeps the previous data.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { closeServices, openServices } from '../domain/index.js';

export const VULNERABILITIES_HELP = `Usage: sitefleet vulnerabilities import FILE [--source wordfence|wpvulnerability] [--data-dir DIR] [--database-url URL]
       sitefleet vulnerabilities status [--data-dir DIR]

import: FILE is the Wordfence Intelligence production feed (one JSON object keyed by record id; streamed, so its size
does not matter) or, with --source wpvulnerability, one WPVulnerability answer or a directory of them
(plugin-<slug>.json, theme-<slug>.json, core-<version>.json). The new feed replaces the previous one only when it
is read to the end; then every site is matched against it.`;

/** Returns the exit code (2: usage). */
export async function vulnerabilitiesCommand(args: string[], out = process.stdout, err = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        source: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    err.write(`${(e as Error).message}\n${VULNERABILITIES_HELP}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [sub, file] = positionals;
  if (values.help || !sub) {
    out.write(`${VULNERABILITIES_HELP}\n`);
    return values.help ? 0 : 2;
  }
  if (sub !== 'import' && sub !== 'status') {
    err.write(`Unknown vulnerabilities command "${sub}".\n${VULNERABILITIES_HELP}\n`);
    return 2;
  }
  const source = values.source ?? 'wordfence';
  if (source !== 'wordfence' && source !== 'wpvulnerability') {
    err.write(`--source must be wordfence or wpvulnerability, not "${source}".\n`);
    return 2;
  }
  if (sub === 'import' && !file) {
    err.write(`vulnerabilities import needs FILE.\n${VULNERABILITIES_HELP}\n`);
    return 2;
  }
  const s = await openServices(loadConfig({ dataDir: values['data-dir'], databaseUrl: values['database-url'] }));
  try {
    if (sub === 'status') {
      out.write(`${JSON.stringify(await s.vulnerabilities.status(), null, 2)}\n`);
      return 0;
    }
    const st = await s.vulnerabilities.importFile(resolve(file!), source);
    const c = await s.vulnerabilities.counts();
    out.write(
      `Imported ${st.records} ${source} records (${st.skipped} skipped) from ${file}.\n` +
        `Fleet: ${c.vulnerabilities} known vulnerabilities on ${c.sites} sites (${c.installs} vulnerable installs).\n`,
    );
    return 0;
  } finally {
    await closeServices(s);
  }
}
