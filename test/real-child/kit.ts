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

export interface RealSite { index: number; url: string; admin: string; password: string }

/** The kit's sites, numbered from 1 as start.sh numbers them. */
export function realSites(): RealSite[] { return inject('realSites'); }
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
  wp(k, `
    foreach (['mainwp_child_pubkey','mainwp_child_nonce','mainwp_security','mainwp_child_server','mainwp_child_connected_admin',
              'mainwp_child_openssl_sign_algo','mainwp_child_uniqueId'] as $o) { delete_option($o); }
    wp_clean_plugins_cache(); wp_clean_themes_cache();
    deactivate_plugins(['rc-beta/rc-beta.php', 'rc-gamma/rc-gamma.php'], true);
    activate_plugin('rc-alpha/rc-alpha.php');
    switch_theme('twentytwentyfive');
  `);
}
