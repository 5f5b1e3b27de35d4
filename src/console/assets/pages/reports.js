// Client reports: generate one (preview first: its summary and text part, nothing kept or sent; then archive it, or
// archive and send it), and the archive, newest first, each report's printable page a link away (served by the
// console door with the report's own page policy: print it to PDF from the browser).
import { may, run } from '../api.js';
import { actionButton, clear, field, h, notice, pager, section, table, when } from '../dom.js';

const PER_PAGE = 25;
const PRESETS = [
  ['last_month', 'Last month'],
  ['this_month', 'This month'],
  ['last_week', 'Last week'],
  ['this_week', 'This week'],
  ['dates', 'From – to'],
];
const pageUrl = (id) => `/console/api/reports/${id}/page`;

function summaryText(s) {
  return [
    `${s.sites} sites`,
    `${s.updates} updates`,
    s.uptime_pct === null ? 'no uptime checks' : `uptime ${s.uptime_pct} %`,
    `${s.incidents} incidents`,
    `${s.vulnerabilities_found} vulnerabilities found, ${s.vulnerabilities_fixed} fixed`,
    `${s.security_findings} security findings`,
    `${s.changes} changes`,
    s.costs_monthly === null ? '' : `${s.costs_monthly.toFixed(2)} a month`,
  ]
    .filter(Boolean)
    .join(' · ');
}

async function generateForm(reloadArchive) {
  const clients = (await run('list-clients-v1', { page: 1, per_page: 100 })).items;
  const client = h(
    'select',
    { name: 'client_id', required: true },
    clients.map((c) => h('option', { value: String(c.id) }, `${c.name}${c.email ? ` <${c.email}>` : ''}`)),
  );
  const preset = h(
    'select',
    { name: 'period' },
    PRESETS.map(([v, l]) => h('option', { value: v }, l)),
  );
  const from = h('input', { name: 'from', type: 'date' });
  const to = h('input', { name: 'to', type: 'date' });
  const recipients = h('input', { name: 'recipients', placeholder: 'extra@example.com, …' });
  const out = h('div', { class: 'report-preview' });
  const input = () => {
    const i = { client_id: Number(client.value) };
    if (preset.value === 'dates') Object.assign(i, { from: from.value, to: to.value });
    else i.period = preset.value;
    return i;
  };
  const extra = () =>
    recipients.value
      .split(/[,\s]+/)
      .map((x) => x.trim())
      .filter(Boolean);
  const show = (title, lines, link) => clear(out, h('h3', {}, title), ...lines.map((l) => h('p', {}, l)), link ?? '');
  if (!clients.length) return h('p', { class: 'muted' }, 'No clients yet: add one on the Clients page.');
  const buttons = [
    actionButton('Preview', async () => {
      const p = await run('preview-client-report-v1', { ...input(), format: 'text' });
      show(p.subject, [summaryText(p.summary)]);
      out.append(h('pre', { class: 'report-text' }, p.text));
    }),
  ];
  if (may('generate-client-report-v1')) {
    const done = (r) => {
      show(
        `${r.title} — ${r.status}`,
        [summaryText(r.summary), r.recipients.length ? `To ${r.recipients.join(', ')}` : '', r.last_error ?? ''].filter(Boolean),
        h('a', { href: pageUrl(r.id), target: '_blank', rel: 'noopener' }, 'Open the printable page'),
      );
      notice(r.status === 'failed' ? `Not sent: ${r.last_error}` : `Report ${r.id} ${r.status}.`, r.status === 'failed' ? 'error' : 'ok');
      reloadArchive();
    };
    buttons.push(
      actionButton('Archive', async () => done(await run('generate-client-report-v1', { ...input(), send: false }))),
      actionButton('Send', async () => done(await run('generate-client-report-v1', { ...input(), send: true, recipients: extra() })), {
        class: 'btn-primary',
      }),
    );
  }
  return h(
    'div',
    {},
    h(
      'form',
      { class: 'filters', onsubmit: (ev) => ev.preventDefault() },
      field('Client', client),
      field('Period', preset),
      field('From', from),
      field('To', to),
      may('generate-client-report-v1') ? field('Also send to', recipients) : '',
      h('div', { class: 'actions' }, ...buttons),
    ),
    out,
  );
}

export async function render(main, _params, query) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  let reloadArchive = () => {};
  const archive = section('Archive', async (reload) => {
    reloadArchive = reload;
    const r = await run('list-client-reports-v1', { page, per_page: PER_PAGE });
    const rows = r.items.map((x) => [
      String(x.id),
      x.title,
      x.scope.kind === 'client' ? `client ${x.client_id}` : x.scope.kind,
      `${x.period.from} – ${x.period.to}`,
      h(
        'span',
        { class: `badge badge-${x.status === 'failed' ? 'error' : x.status === 'sent' ? 'ok' : 'muted'}`, title: x.last_error ?? '' },
        x.status,
      ),
      x.recipients.join(', '),
      x.scheduled ? 'schedule' : x.created_by,
      when(x.created_at),
      h('a', { href: pageUrl(x.id), target: '_blank', rel: 'noopener' }, 'Printable page'),
    ]);
    return h(
      'div',
      {},
      table('Client reports', ['#', 'Report', 'For', 'Period', 'Status', 'Recipients', 'By', 'Created', ''], rows, 'No reports yet.'),
      pager(page, PER_PAGE, r.total, 'reports', (p) => `#/reports?page=${p}`),
    );
  });
  clear(
    main,
    h('h1', {}, 'Client reports'),
    h(
      'p',
      { class: 'muted' },
      'What was done for a client over a period: updates, uptime and incidents, vulnerabilities, security, changes and costs. Branding and schedules: update-report-settings-v1.',
    ),
    section('Generate a report', () => generateForm(() => reloadArchive())),
    archive,
  );
}
