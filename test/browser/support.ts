// Browser lane support: Debian's chromium driven by playwright-core, a real `sitefleet serve` process with the
// child simulator behind it, and screenshots kept as artefacts (artifacts/browser/, git-ignored).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startChildSim, type ChildSim } from '../../src/child/simulator/server.js';
import { cli, serveProcess } from '../support/process.js';

export const CHROMIUM = process.env.SITEFLEET_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));

export async function launchBrowser(): Promise<Browser> {
  // playwright-core gives each launch a new empty profile directory of its own (--user-data-dir) and adds --headless.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false, // as root: --no-sandbox
    args: [
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 60_000,
  });
}

export async function shot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

export interface ConsoleServer {
  url: string;
  dataDir: string;
  admin: { name: string; password: string };
  viewer: { name: string; password: string };
  token: string;
  sim: ChildSim;
  rest(path: string, init?: { method?: string; json?: unknown }): Promise<{ status: number; body: any }>;
  /** Everything the serve process has written to stdout and stderr so far (its logs). */
  output(): string;
  close(): Promise<void>;
}

/**
 * `sitefleet serve` as a process (the console as users get it) over a fresh data dir, with `sites` simulated
 * children registered and synced. The first start's administrator and API key are read from its output.
 */
export async function startConsoleServer(
  opts: { sites?: number; seed?: number; latencyMs?: number; env?: Record<string, string> } = {},
): Promise<ConsoleServer> {
  const sim = await startChildSim({ sites: opts.sites ?? 12, seed: opts.seed ?? 17, latencyMs: opts.latencyMs ?? 0 });
  const dataDir = mkdtempSync(join(tmpdir(), 'sitefleet-browser-'));
  const p = await serveProcess(['--data-dir', dataDir, '--allow-private-sites'], opts.env ?? {});
  const out = p.stdout();
  const password = /password: (.+)/.exec(out)![1]!.trim();
  const token = /API key:\s+(\S+)/.exec(out)![1]!;
  const viewerOut = await cli(['users', 'create', '--name', 'viewer', '--role', 'viewer', '--data-dir', dataDir]);
  const viewerPassword = viewerOut.stdout.trim().split('\n').pop()!.trim();
  const rest = async (path: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await fetch(`${p.url}/wp-json/svc/v2${path}`, {
      method: init.method ?? (init.json ? 'POST' : 'GET'),
      headers: { Authorization: `Bearer ${token}`, ...(init.json ? { 'Content-Type': 'application/json' } : {}) },
      body: init.json ? JSON.stringify(init.json) : undefined,
    });
    return { status: res.status, body: await res.json() };
  };
  for (const s of sim.sites) {
    const r = await rest('/sites/add', {
      json: { url: s.url, admin: s.admin, admin_password: s.password, name: `Shop ${String(s.index).padStart(2, '0')}` },
    });
    if (r.status !== 200) throw new Error(`add ${s.url}: ${JSON.stringify(r.body)}`);
  }
  return {
    url: p.url,
    dataDir,
    token,
    sim,
    rest,
    output: () => p.stdout() + p.stderr(),
    admin: { name: 'admin', password },
    viewer: { name: 'viewer', password: viewerPassword },
    close: async () => {
      await p.stop();
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Logs in through the form, as a person does (keyboard: type, Enter). */
export async function logIn(page: Page, base: string, who: { name: string; password: string }): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel('User').fill(who.name);
  await page.getByLabel('Application password').fill(who.password);
  await page.getByLabel('Application password').press('Enter');
  await page.getByRole('heading', { name: 'Fleet', level: 1 }).waitFor();
}

/** A fresh browser context (no cookies) logged in as `who`, at a desktop width unless told otherwise. */
export async function openPageAs(
  browser: Browser,
  base: string,
  who: { name: string; password: string },
  viewport = { width: 1280, height: 900 },
): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  await logIn(page, base, who);
  return { ctx, page };
}
