// The console's shell: login, navigation and the hash router (#/, #/sites/12, #/sites/new, #/jobs/<id>, #/tags,
// #/clients, #/updates, #/vulnerabilities, …). Each page is a module whose render(main, params) may return a cleanup
// function. A `client` user gets the client portal instead: one page, no navigation to the others (the server refuses
// or scopes them anyway).
import { current, has, loadSession, login, logout, may } from './api.js';
import { clear, errorText, field, h, notice } from './dom.js';
import * as overview from './pages/overview.js';
import * as site from './pages/site.js';
import * as addSite from './pages/add-site.js';
import * as jobs from './pages/jobs.js';
import * as tags from './pages/tags.js';
import * as clients from './pages/clients.js';
import * as updates from './pages/updates.js';
import * as audit from './pages/audit.js';
import * as install from './pages/install.js';
import * as policies from './pages/policies.js';
import * as notifications from './pages/notifications.js';
import * as portal from './pages/portal.js';
import * as reports from './pages/reports.js';
import * as vulnerabilities from './pages/vulnerabilities.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let cleanup = null;

const ROUTES = [
  [/^\/$/, overview, 'Fleet'],
  [/^\/sites\/new$/, addSite, 'Add a site'],
  [/^\/sites\/(\d+)$/, site, 'Site'],
  [/^\/jobs$/, jobs, 'Jobs'],
  [/^\/jobs\/([\w-]+)$/, jobs, 'Job'],
  [/^\/tags$/, tags, 'Tags'],
  [/^\/clients$/, clients, 'Clients'],
  [/^\/updates$/, updates, 'Updates'],
  [/^\/audit$/, audit, 'Audit log'],
  [/^\/install$/, install, 'Install'],
  [/^\/policies$/, policies, 'Update policies'],
  [/^\/notifications$/, notifications, 'Notifications'],
  [/^\/reports$/, reports, 'Client reports'],
  [/^\/vulnerabilities$/, vulnerabilities, 'Vulnerabilities'],
];
const PORTAL_ROUTES = [[/^\/$/, portal, 'Your sites']];
const isPortal = () => current()?.user.role === 'client';

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = raw.split('?');
  return { path, query: new URLSearchParams(query) };
}

function fleetLinks() {
  const links = [
    ['#/', 'Fleet'],
    ['#/jobs', 'Jobs'],
    ['#/tags', 'Tags'],
    ['#/clients', 'Clients'],
  ];
  // The updates page appears once the registry has the update abilities.
  if (has('list-updates-v1')) links.splice(1, 0, ['#/updates', 'Updates']);
  // The audit log: administrators only (the server refuses it to anyone else).
  if (may('list-audit-log-v1')) links.push(['#/audit', 'Audit log']);
  if (has('search-plugin-directory-v1')) links.push(['#/install', 'Install']);
  if (has('list-update-policies-v1')) links.push(['#/policies', 'Policies']);
  if (has('list-notification-channels-v1')) links.push(['#/notifications', 'Notifications']);
  if (has('list-client-reports-v1')) links.push(['#/reports', 'Reports']);
  if (has('list-vulnerabilities-v1')) links.push(['#/vulnerabilities', 'Vulnerabilities']);
  return links;
}

function drawChrome() {
  const s = current();
  nav.hidden = !s;
  who.hidden = !s;
  if (!s) return;
  const links = isPortal() ? [['#/', 'Your sites']] : fleetLinks();
  const { path } = parseHash();
  clear(
    nav,
    h(
      'ul',
      {},
      links.map(([href, label]) => {
        const active = href === '#/' ? path === '/' || path.startsWith('/sites') : path.startsWith(href.slice(1));
        return h('li', {}, h('a', { href, 'aria-current': active ? 'page' : false }, label));
      }),
    ),
  );
  clear(
    who,
    h('span', {}, s.user.name, ' ', h('span', { class: `role role-${s.user.role}` }, s.user.role)),
    h(
      'button',
      {
        type: 'button',
        class: 'btn btn-small',
        id: 'logout',
        onclick: async () => {
          await logout();
          showLogin('You are logged out.');
        },
      },
      'Log out',
    ),
  );
}

function showLogin(message) {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  drawChrome();
  document.title = 'Log in · sitefleet';
  const name = h('input', { name: 'name', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const out = h('div', { 'aria-live': 'polite' }, message ? h('p', { class: 'muted' }, message) : '');
  const form = h(
    'form',
    {
      class: 'card login',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const button = form.querySelector('button');
        button.disabled = true;
        try {
          await login(name.value.trim(), password.value);
          password.value = '';
          await route();
        } catch (e) {
          clear(out, errorText(e));
          password.select();
        } finally {
          button.disabled = false;
        }
      },
    },
    h('h1', {}, 'Log in'),
    h('p', { class: 'muted' }, 'A dashboard user and its application password (as for the abilities door).'),
    field('User', name),
    field('Application password', password),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Log in'),
    out,
  );
  clear(main, form);
  name.focus();
}

async function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  if (!current()) return showLogin();
  drawChrome();
  const { path, query } = parseHash();
  const found = (isPortal() ? PORTAL_ROUTES : ROUTES).find(([re]) => re.test(path));
  if (!found) {
    clear(main, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Back to the fleet')));
    return;
  }
  const [re, page, title] = found;
  const params = re.exec(path).slice(1);
  document.title = `${title} · sitefleet`;
  clear(main, h('p', { class: 'muted' }, 'Loading…'));
  try {
    cleanup = (await page.render(main, params, query)) ?? null;
  } catch (e) {
    if (e.status !== 401) clear(main, h('h1', {}, title), errorText(e));
  }
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => void route());
window.addEventListener('console:logged-out', (ev) => showLogin(ev.detail?.message));

loadSession().then(
  () => route(),
  (e) => {
    clear(main, errorText(e));
    notice('The console could not reach the server.', 'error');
  },
);
