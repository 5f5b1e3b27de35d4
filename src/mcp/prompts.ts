// MCP prompts: the fleet's workflows as ready-made requests a person picks in their client (troubleshoot a site, weekly
// maintenance, a safe update run, a security review, a client report, onboarding a site). Each names our tools and
// links resources (resource_link items, not pasted data); a step whose tools the session cannot use is left out,
// and a prompt whose core tools it cannot use is not listed.
import type { PromptMessage } from '@modelcontextprotocol/sdk/types.js';

/** What a prompt argument names, for completions and checks. */
export type ArgKind = 'site' | 'tag' | 'client' | 'job' | 'plugin' | 'types' | 'url' | 'text';

export interface PromptArg {
  name: string;
  description: string;
  required?: boolean;
  kind: ArgKind;
}

/** The references a prompt's arguments resolved to (through the abilities, so the caller's permissions apply). */
export interface Resolved {
  site?: { id: number; url: string; name: string };
  tag?: { id: number; name: string };
  client?: { id: number; name: string };
  plugin?: string;
  types?: string[];
  url?: string;
  text: Record<string, string>;
}

type Step = [tools: readonly string[], text: string];
type Link = { uri: string; name: string; title: string; description?: string };

export interface PromptDef {
  name: string;
  title: string;
  description: string;
  arguments: PromptArg[];
  /** Tools without which the workflow makes no sense: the prompt is listed only when the session has them all. */
  needs: readonly string[];
  build(r: Resolved): { intro: string; steps: Step[]; close: string; links: Link[] };
}

export const UPDATE_TYPES = ['core', 'plugins', 'themes', 'translations'] as const;

const siteArg = (required: boolean, what = 'The site'): PromptArg => ({
  name: 'site',
  description: `${what}: its id or domain (completes).`,
  required,
  kind: 'site',
});
const tagArg: PromptArg = { name: 'tag', description: 'Only the sites carrying this tag (id or name; completes).', kind: 'tag' };
const clientArg = (required: boolean): PromptArg => ({
  name: 'client',
  description: required ? 'The client: id or e-mail (completes).' : 'Only the sites of this client (id or e-mail; completes).',
  required,
  kind: 'client',
});

const siteLinks = (s: NonNullable<Resolved['site']>, parts: Array<'plugins' | 'themes' | 'updates'>): Link[] => [
  { uri: `sitefleet://sites/${s.id}`, name: `site-${s.id}`, title: `${s.name} (${s.url})`, description: 'The site and its stats.' },
  ...parts.map((p) => ({ uri: `sitefleet://sites/${s.id}/${p}`, name: `site-${s.id}-${p}`, title: `${s.name}: ${p}` })),
];
const FLEET: Link = { uri: 'sitefleet://sites', name: 'sites', title: 'The fleet' };
const INCIDENTS: Link = { uri: 'sitefleet://incidents', name: 'incidents', title: 'Downtime incidents' };

/** The selector arguments the update and security tools take, as JSON for the assistant to pass on. */
function selectorOf(r: Resolved): Record<string, unknown> {
  const sel: Record<string, unknown> = {};
  if (r.site) sel.site_ids_or_domains = [r.site.id];
  if (r.tag) sel.tags = [r.tag.id];
  if (r.client) sel.clients = [r.client.id];
  return sel;
}
function selector(r: Resolved): string {
  const sel = selectorOf(r);
  return Object.keys(sel).length ? JSON.stringify(sel) : '{} (the whole fleet)';
}
function scope(r: Resolved): string {
  const parts = [
    r.site && `the site ${r.site.name} (${r.site.url}, id ${r.site.id})`,
    r.tag && `the sites tagged "${r.tag.name}" (tag ${r.tag.id})`,
    r.client && `the sites of the client ${r.client.name} (client ${r.client.id})`,
  ].filter(Boolean);
  return parts.length ? parts.join(' and ') : 'the whole fleet';
}

export const PROMPTS: readonly PromptDef[] = [
  {
    name: 'troubleshoot-site',
    title: 'Troubleshoot a site',
    description: 'Find why a site misbehaves: status, last sync, downtime, recent changes, security findings.',
    arguments: [siteArg(true), { name: 'symptom', description: 'What is wrong, in the words of whoever reported it.', kind: 'text' }],
    needs: ['get-site-v1'],
    build: (r) => ({
      intro: `Troubleshoot ${scope(r)}${r.text.symptom ? `. The reported problem: "${r.text.symptom}"` : ''}.`,
      steps: [
        [['get-site-v1'], 'Read the linked site resource: status, WordPress and PHP versions, last sync and its error.'],
        [
          ['check-site-v1'],
          `If the site is disconnected or its last sync is old, call check-site-v1 with site_id_or_domain ${r.site!.id}.`,
        ],
        [['sync-sites-v1'], `Refresh what it reports with sync-sites-v1 and site_ids_or_domains [${r.site!.id}].`],
        [['get-site-uptime-v1', 'list-incidents-v1'], 'Look for downtime: get-site-uptime-v1, then list-incidents-v1 for this site.'],
        [
          ['get-site-changes-v1'],
          'get-site-changes-v1 shows what changed lately; a change just before the problem began is the first suspect.',
        ],
        [['get-site-security-v1'], 'get-site-security-v1 for its security findings.'],
        [['reconnect-site-v1'], 'If the connection itself fails, reconnect-site-v1 (it needs the administrator password: ask the person).'],
      ],
      close: 'Report the likely cause, the evidence for it and the next step. Change nothing without asking.',
      links: [...siteLinks(r.site!, ['plugins', 'updates']), INCIDENTS],
    }),
  },
  {
    name: 'weekly-maintenance',
    title: 'Weekly maintenance',
    description: 'The weekly round: refresh, find broken and down sites, pending updates, security issues and abandoned plugins.',
    arguments: [tagArg, clientArg(false)],
    needs: ['list-sites-v1', 'list-updates-v1'],
    build: (r) => ({
      intro: `Run the weekly maintenance round for ${scope(r)}.`,
      steps: [
        [['sync-sites-v1'], 'Refresh the data with sync-sites-v1 (a large fleet becomes a background job: follow its job resource).'],
        [['list-sites-v1'], 'list-sites-v1 with status "disconnected", then "suspended": which sites need attention.'],
        [['list-monitors-v1'], 'list-monitors-v1 with status "down"; the linked incidents resource has the week\'s downtime.'],
        [['list-updates-v1'], `list-updates-v1 with ${selector(r)}: the pending updates, by type.`],
        [['get-security-issues-v1'], 'get-security-issues-v1: sites whose last sync reported security issues, worst first.'],
        [
          ['get-abandoned-plugins-v1', 'get-abandoned-themes-v1'],
          'get-abandoned-plugins-v1 and get-abandoned-themes-v1: what nobody maintains any more.',
        ],
        [['run-updates-v1'], 'Offer to apply the updates with the safe-update-run prompt or run-updates-v1 (dry_run=true first).'],
      ],
      close: 'End with a short checklist: what is fine, what needs a decision, what you propose to do.',
      links: [FLEET, INCIDENTS],
    }),
  },
  {
    name: 'safe-update-run',
    title: 'A safe update run',
    description: 'Apply pending updates carefully: list, preview with a dry run, confirm with the person, apply, verify.',
    arguments: [
      siteArg(false, 'Only this site'),
      tagArg,
      clientArg(false),
      { name: 'types', description: 'Comma-separated: core, plugins, themes, translations (all when empty).', kind: 'types' },
      { name: 'plugin', description: 'Only this plugin (its slug, e.g. akismet/akismet.php; needs site; completes).', kind: 'plugin' },
    ],
    needs: ['list-updates-v1', 'run-updates-v1'],
    build: (r) => {
      const args = JSON.stringify({ ...selectorOf(r), ...(r.types ? { types: r.types } : {}) });
      return {
        intro: `Update ${scope(r)}${r.types ? ` (${r.types.join(', ')})` : ''}${r.plugin ? `, only the plugin ${r.plugin}` : ''}, safely.`,
        steps: [
          [
            ['list-updates-v1'],
            `list-updates-v1 with ${args} (refresh=true if the last sync is old): what is pending, and what is ignored.`,
          ],
          ...(r.plugin
            ? ([
                [
                  ['update-site-plugins-v1'],
                  `update-site-plugins-v1 with site_id_or_domain ${r.site!.id}, slugs ["${r.plugin}"] and dry_run=true; show the person; then confirm=true.`,
                ],
              ] as Step[])
            : ([
                [['run-updates-v1'], `run-updates-v1 with ${args} and dry_run=true: show the person exactly what would change.`],
                [
                  ['run-updates-v1'],
                  'Only after the person agrees: the same call with confirm=true. A large run becomes a job: follow its job resource.',
                ],
              ] as Step[])),
          [['list-monitors-v1'], 'Afterwards, list-monitors-v1 with status "down" to check that no site went down.'],
          [['sync-sites-v1'], 'sync-sites-v1 for the sites touched, then list-updates-v1 again: what failed stays pending.'],
        ],
        close: 'Report what was updated, what failed (with its error code) and what was skipped and why.',
        links: r.site ? siteLinks(r.site, ['updates', 'plugins']) : [FLEET],
      };
    },
  },
  {
    name: 'security-review',
    title: 'Security review',
    description: 'Review security: reported issues, abandoned plugins and themes, outdated software, administrators, hardening.',
    arguments: [siteArg(false, 'Only this site'), tagArg],
    needs: ['get-security-issues-v1'],
    build: (r) => ({
      intro: `Review the security of ${scope(r)}.`,
      steps: [
        r.site
          ? [['get-site-security-v1'], `get-site-security-v1 with site_id_or_domain ${r.site.id}: its findings and TLS certificate.`]
          : [['get-security-issues-v1'], 'get-security-issues-v1: the sites whose last sync reported issues, worst first.'],
        [
          ['get-abandoned-plugins-v1', 'get-abandoned-themes-v1'],
          `get-abandoned-plugins-v1 and get-abandoned-themes-v1${r.site ? ` with site_id_or_domain ${r.site.id}` : ''}: code nobody maintains.`,
        ],
        [['list-updates-v1'], `list-updates-v1 with ${selector(r)}: every pending core, plugin or theme update is a known exposure.`],
        [['list-users-v1'], 'list-users-v1 with roles ["administrator"]: too many administrators, or unknown ones, is a finding.'],
        [['get-site-plugins-v1'], 'get-site-plugins-v1 with status "inactive": inactive plugins are attack surface to remove.'],
      ],
      close: 'Rank the findings by risk (high, medium, low), say why each matters and what fixes it.',
      links: r.site ? siteLinks(r.site, ['plugins', 'themes', 'updates']) : [FLEET],
    }),
  },
  {
    name: 'client-report',
    title: 'Client report',
    description: 'A report for a client about their sites: health, updates, uptime, costs, in plain language.',
    arguments: [
      clientArg(true),
      { name: 'period', description: 'The period covered, e.g. "October 2026" or "the last 30 days".', kind: 'text' },
    ],
    needs: ['get-client-v1', 'get-client-sites-v1'],
    build: (r) => ({
      intro: `Write a report for the client ${r.client!.name} (client ${r.client!.id})${r.text.period ? ` covering ${r.text.period}` : ''}.`,
      steps: [
        [['get-client-v1'], `get-client-v1 with client_id_or_email ${r.client!.id}: who they are.`],
        [['get-client-sites-v1'], 'get-client-sites-v1: their sites and the status of each.'],
        [['list-updates-v1'], `list-updates-v1 with {"clients":[${r.client!.id}]}: what is pending.`],
        [['list-incidents-v1'], 'list-incidents-v1 for each site: downtime in the period.'],
        [['get-security-issues-v1'], 'get-security-issues-v1: any of their sites with open security issues.'],
        [['get-client-costs-v1'], 'get-client-costs-v1: the costs that apply to them.'],
      ],
      close:
        'Write for the client, not for an engineer: what was done, what is fine, what needs their decision. No secrets, no internal ids.',
      links: [INCIDENTS],
    }),
  },
  {
    name: 'onboard-site',
    title: 'Onboard a new site',
    description: 'Bring a new WordPress site under management: connect it, tag it, sync it, check it, watch it.',
    arguments: [
      { name: 'url', description: 'The site address, e.g. https://example.com.', required: true, kind: 'url' },
      clientArg(false),
      tagArg,
    ],
    needs: ['add-site-v1'],
    build: (r) => ({
      intro: `Onboard ${r.url}${r.client ? ` for the client ${r.client.name} (client ${r.client.id})` : ''}${r.tag ? ` with the tag "${r.tag.name}"` : ''}.`,
      steps: [
        [
          ['add-site-v1'],
          `add-site-v1 with url "${r.url}", the administrator user name the person gives you${r.client ? `, client_id ${r.client.id}` : ''}${r.tag ? `, tags [${r.tag.id}]` : ''}. The child plugin must be installed and active on the site first.`,
        ],
        [['sync-sites-v1'], 'sync-sites-v1 with the new site: versions, plugins, themes, pending updates.'],
        [['get-site-plugins-v1'], 'get-site-plugins-v1 and the site resources: what it runs.'],
        [['get-site-security-v1'], 'get-site-security-v1: findings to fix from the start.'],
        [['update-monitor-settings-v1'], 'update-monitor-settings-v1 with active=true: uptime checks for it.'],
      ],
      close: 'Say what was set up and what the person should still do (pending updates, security findings).',
      links: [FLEET],
    }),
  },
];

/** The prompt's text and links as one user message: steps whose tools the session lacks are left out. */
export function promptMessages(p: PromptDef, r: Resolved, canUse: (tool: string) => boolean): PromptMessage[] {
  const built = p.build(r);
  const steps = built.steps.filter(([tools]) => tools.every(canUse));
  const text = [built.intro, '', ...steps.map(([, t], i) => `${i + 1}. ${t}`), '', built.close].join('\n');
  return [
    { role: 'user', content: { type: 'text', text } },
    ...built.links.map((l): PromptMessage => ({
      role: 'user',
      content: {
        type: 'resource_link',
        uri: l.uri,
        name: l.name,
        title: l.title,
        mimeType: 'application/json',
        ...(l.description ? { description: l.description } : {}),
      },
    })),
  ];
}
