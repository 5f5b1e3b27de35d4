// Starts the real-site kit once per lane run: a clean run directory (unless SITEFLEET_RC_KEEP=1 reuses a running
// one, for quick local iterations), N sites (SITEFLEET_RC_SITES, default 4), stopped and wiped at the end.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { KIT, RC_DIR, RC_SITES, type RealSite } from './kit.js';

declare module 'vitest' {
  export interface ProvidedContext {
    realSites: RealSite[];
  }
}

export default function setup(project: TestProject): () => void {
  const keep = process.env.SITEFLEET_RC_KEEP === '1';
  if (!keep) {
    try {
      execFileSync(`${KIT}/stop.sh`, ['--dir', RC_DIR], { stdio: 'ignore' });
    } catch {
      /* not running */
    }
    rmSync(RC_DIR, { recursive: true, force: true });
  }
  const out = execFileSync(`${KIT}/start.sh`, ['--dir', RC_DIR, '--sites', String(RC_SITES)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 600_000,
  });
  const sites = out
    .trim()
    .split('\n')
    .map((l, i) => ({ index: i + 1, ...JSON.parse(l) }) as RealSite);
  project.provide('realSites', sites);
  return () => {
    if (keep) return;
    try {
      execFileSync(`${KIT}/stop.sh`, ['--dir', RC_DIR], { stdio: 'ignore' });
    } catch {
      /* already stopped */
    }
    rmSync(RC_DIR, { recursive: true, force: true });
  };
}
