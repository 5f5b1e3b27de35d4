// The browser lane needs Debian's chromium: installed with apt when it is missing (CI machines start without it).
// Never a browser download of playwright's own.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { CHROMIUM } from './support.js';

export default function setup(): void {
  if (existsSync(CHROMIUM)) return;
  const apt = (args: string[]) =>
    spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  let r = apt(['install', '-y', '-q', 'chromium']);
  if (r.status !== 0) {
    apt(['update', '-q']);
    r = apt(['install', '-y', '-q', 'chromium']);
  }
  if (r.status !== 0 || !existsSync(CHROMIUM))
    throw new Error(`chromium is not installed at ${CHROMIUM} and apt-get could not install it.`);
}
