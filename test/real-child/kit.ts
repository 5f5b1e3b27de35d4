// The real-site kit (../shared/real-child) as functions: where it lives, the sites it started, the ground truth
// inside a site (wp.sh), update offers (offer-update.sh), and a reset that makes a site as the kit first made it.
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const KIT = resolve(process.env.SITEFLEET_RC_KIT ?? resolve(repo, '../shared/real-child'));
// Short on purpose: MariaDB's Unix socket lives inside it.
export const RC_DIR = process.env.SITEFLEET_RC_DIR ?? '/tmp/sitefleet-rc';
export const RC_SITES = Number(process.env.SITEFLEET_RC_SITES ?? 4);

export interface RealSite {
  index: number;
  url: string;
  admin: string;
  password: string;
}

/** The kit's sites, numbered from 1 as start.sh numbers them. */
export function realSites(): RealSite[] {
  return inject('realSites');
}
export function realSite(k: number): RealSite {
  const s = realSites()[k - 1];
  if (!s) throw new Error(`the lane started ${realSites().length} real sites; there is no site ${k}`);
  return s;
}

/** Runs PHP inside site k (as admin) and returns what it printed. */
export function wp(k: number, code: string): string {
  return execFileSync(`${KIT}/wp.sh`, ['--dir', RC_DIR, '--site', String(k), code], { encoding: 'utf8' });
}
/** Runs PHP inside site k and parses what it returns: `wpJson(1, 'return get_option("blogname");')`. */
export function wpJson<T = any>(k: number, code: string): T {
  return JSON.parse(wp(k, `echo json_encode((function () { ${code} })());`)) as T;
}

/** offer-update.sh: `offer(1, '--plugin', 'rc-beta', '--to', '2.1.0')`. */
export function offer(k: number, ...args: string[]): { type: string; slug: string; file?: string; from: string; to: string } {
  return JSON.parse(execFileSync(`${KIT}/offer-update.sh`, ['--dir', RC_DIR, '--site', String(k), ...args], { encoding: 'utf8' }));
}

/**
 * Makes site k as start.sh first made it, as far as tests touch it: no dashboard connection (the child's
 * "Clear Connection Data"), the fixture plugins and themes and WordPress's own themes back on disk at their versions, rc-alpha active,
 * rc-beta and rc-gamma inactive, twentytwentyfive the active theme. Posts and users made by tests stay.
 */
export function resetSite(k: number): void {
  const root = `${RC_DIR}/sites/${k}/wp-content`;
  cpSync(`${KIT}/fixtures/plugins`, `${root}/plugins`, { recursive: true, force: true });
  cpSync(`${KIT}/fixtures/themes`, `${root}/themes`, { recursive: true, force: true });
  cpSync(`${KIT}/wordpress/wp-content/themes`, `${root}/themes`, { recursive: true, force: true });
  wp(
    k,
    `
    foreach (['mainwp_child_pubkey','mainwp_child_nonce','mainwp_security','mainwp_child_server','mainwp_child_connected_admin',
              'mainwp_child_openssl_sign_algo','mainwp_child_uniqueId'] as $o) { delete_option($o); }
    wp_clean_plugins_cache(); wp_clean_themes_cache();
    deactivate_plugins(['rc-beta/rc-beta.php', 'rc-gamma/rc-gamma.php'], true);
    activate_plugin('rc-alpha/rc-alpha.php');
    switch_theme('twentytwentyfive');
  `,
  );
}

/**
 * Does what a person in wp-admin does, over HTTP (the child's changes log records wp-admin requests, not wp.sh):
 * logs in as admin and follows the nonce-carrying link of the plugins screen that activates or deactivates `plugin`.
 */
export async function wpAdminPluginAction(k: number, action: 'activate' | 'deactivate', plugin: string): Promise<void> {
  const site = realSite(k);
  const jar = new Map<string, string>();
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [kv] = c.split(';');
      const i = kv!.indexOf('=');
      jar.set(kv!.slice(0, i), kv!.slice(i + 1));
    }
  };
  const cookie = () => [...jar].map(([n, v]) => `${n}=${v}`).join('; ');
  const go = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(new URL(path, site.url), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: cookie() },
    });
    keep(res);
    return res;
  };
  await go('wp-login.php');
  jar.set('wordpress_test_cookie', 'WP%20Cookie%20check');
  const login = await go('wp-login.php', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ log: site.admin, pwd: site.password, testcookie: '1' }).toString(),
  });
  if (login.status !== 302) throw new Error(`wp-admin login on site ${k} answered ${login.status}`);
  const page = await (await go('wp-admin/plugins.php')).text();
  const wanted = `plugins.php?action=${action}&amp;plugin=${encodeURIComponent(plugin)}`;
  const start = page.indexOf(wanted);
  if (start === -1) throw new Error(`no ${action} link for ${plugin} on site ${k}'s plugins screen`);
  const href = page.slice(start, page.indexOf('"', start)).replace(/&amp;/g, '&');
  const done = await go(`wp-admin/${href}`);
  if (done.status !== 302) throw new Error(`wp-admin ${action} of ${plugin} on site ${k} answered ${done.status}`);
}

/** Site k as the kit made it, registered through REST with a fresh sitefleet server: what most lane files start from. */
export async function serverWithRealSite(k: number, startServer: () => Promise<import('../support/server.js').TestServer>) {
  resetSite(k);
  const s = await startServer();
  const site = realSite(k);
  const r = await s.rest('/sites/add', { method: 'POST', json: { url: site.url, admin: site.admin, admin_password: site.password } });
  if (r.status !== 200) throw new Error(`registering real site ${k}: ${r.status} ${JSON.stringify(r.body)}`);
  return { s, id: r.body.data.id as number };
}

/**
 * Takes site k off the air: its `php -S` master and workers (one process group, recorded in $RC_DIR/run) get SIGTERM.
 * Only a group whose leader's command line names this site's directory is touched. `startSitesAgain()` brings it
 * back on the same URL.
 */
export async function stopSitePhp(k: number): Promise<void> {
  const { readFileSync } = await import('node:fs');
  const pid = Number(readFileSync(`${RC_DIR}/run/site-${k}.pid`, 'utf8').trim());
  const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  if (!cmd.includes(`${RC_DIR}/sites/${k}`)) throw new Error(`pid ${pid} is not site ${k}'s php -S`);
  process.kill(-pid, 'SIGTERM');
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`site ${k}'s php -S (pid ${pid}) did not stop`);
}

/** start.sh again on the lane's dir: stopped sites come back on their URLs, running ones are left alone. */
export function startSitesAgain(): void {
  execFileSync(`${KIT}/start.sh`, ['--dir', RC_DIR, '--sites', String(RC_SITES)], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 300_000,
  });
}
