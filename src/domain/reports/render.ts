// A report rendered three ways from its model: an HTML e-mail (tables and inline styles, which mail clients keep), its
// text part, and a standalone printable page (one HTML document with print CSS, no script, a CSP that lets in only
// inline styles and the logo). Every piece of text from users, sites and feeds is escaped; colours are #RRGGBB and
// the logo an https or image data: URL, both checked when stored (service.ts) and checked again here.
import type { ReportModel } from './content.js';

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESC[c]!);
const e = (v: unknown) => escapeHtml(v === null || v === undefined ? '' : String(v));
const HEX = /^#[0-9a-fA-F]{6}$/;
const color = (c: string, dflt: string) => (HEX.test(c) ? c : dflt);
export const LOGO_URL = /^(https:\/\/[^\s"'<>]+|data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+)$/;

const day = (isoTime: string) => isoTime.slice(0, 10);
const when = (isoTime: string) => isoTime.replace('T', ' ').replace(/(:\d{2})(\.\d+)?Z$/, '$1 UTC');

export function duration(s: number): string {
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

const pct = (p: number | null) => (p === null ? 'no checks' : `${p.toFixed(2)} %`);
const money = (n: number) => n.toFixed(2);
const more = (n: number) => (n ? `and ${n} more` : '');
const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const OUTCOMES: Record<string, string> = {
  updated: 'updated',
  failed: 'failed',
  rolled_back: 'rolled back',
  rollback_failed: 'rollback failed',
  skipped: 'skipped',
};
const outcome = (o: string) => OUTCOMES[o] ?? o.replace(/_/g, ' ');

export function reportSubject(m: ReportModel): string {
  return `${m.branding.name}: ${m.title}`.slice(0, 250);
}

interface Section {
  title: string;
  /** One line summing the section up. */
  lead: string;
  head: string[];
  rows: string[][];
  more: number;
  empty: string;
  note?: string;
}

function sections(m: ReportModel): Section[] {
  const out: Section[] = [];
  const byOutcome = Object.entries(m.updates.by_outcome)
    .map(([o, n]) => `${n} ${outcome(o)}`)
    .join(', ');
  out.push({
    title: 'Updates',
    lead: m.updates.total ? `${count(m.updates.total, 'update')}: ${byOutcome}.` : 'No updates were applied in this period.',
    head: ['Date', 'Site', 'What', 'Version', 'Outcome'],
    rows: m.updates.items.map((u) => [
      day(u.at),
      u.site,
      `${u.name} (${u.type})`,
      `${u.from ?? '?'} → ${u.to ?? '?'}`,
      outcome(u.outcome) + (u.outcome !== 'updated' && u.reason ? `: ${u.reason}` : ''),
    ]),
    more: m.updates.more,
    empty: '',
  });
  const u = m.uptime;
  out.push({
    title: 'Uptime',
    lead:
      (u.checks ? `Uptime ${pct(u.uptime_pct)} over ${count(u.checks, 'check')}` : 'No uptime checks in this period') +
      `; ${count(u.incidents_total, 'incident')}` +
      (u.incidents_total ? `, ${duration(u.downtime_s)} down in all.` : '.'),
    note: u.measured_from ? `Check counts are kept 31 days: uptime is measured from ${u.measured_from}.` : undefined,
    head: ['Site', 'Uptime', 'Incidents', 'Down'],
    rows: u.sites.map((s) => [s.site, pct(s.uptime_pct), String(s.incidents), s.downtime_s ? duration(s.downtime_s) : '—']),
    more: u.sites_more,
    empty: '',
  });
  out.push({
    title: 'Incidents',
    lead: u.incidents_total ? `${count(u.incidents_total, 'incident')}.` : 'No incidents.',
    head: ['Started', 'Site', 'Lasted', 'Cause'],
    rows: u.incidents.map((i) => [
      when(i.started_at),
      i.site,
      i.ended_at ? duration(i.duration_s) : `ongoing (${duration(i.duration_s)})`,
      `${i.cause}: ${i.message}`,
    ]),
    more: u.incidents_more,
    empty: '',
  });
  const v = m.vulnerabilities;
  out.push({
    title: 'Vulnerabilities found',
    lead: v.found_total ? `${v.found_total} found.` : 'No vulnerabilities were found.',
    head: ['Date', 'Site', 'Vulnerability', 'Item', 'Fixed in'],
    rows: v.found.map((x) => [
      day(x.at),
      x.site,
      `${x.title}${x.severity ? ` (${x.severity})` : ''}`,
      `${x.item} ${x.version ?? ''}`,
      x.fixed_in ?? 'no fix yet',
    ]),
    more: v.found_more,
    empty: '',
  });
  out.push({
    title: 'Vulnerabilities fixed',
    lead: v.fixed_total ? `${v.fixed_total} fixed.` : 'No vulnerabilities were fixed.',
    head: ['Date', 'Site', 'Vulnerability', 'Item', 'Version'],
    rows: v.fixed.map((x) => [day(x.at), x.site, x.title, x.item, `${x.from ?? '?'} → ${x.to ?? 'removed'}`]),
    more: v.fixed_more,
    empty: '',
  });
  const s = m.security;
  out.push({
    title: 'Security',
    lead: s.sites_with_issues
      ? `${s.sites_with_issues} site${s.sites_with_issues === 1 ? '' : 's'} with findings: ${s.high} high, ${s.medium} medium, ${s.low} low (as of each site's last sync).`
      : "No security findings (as of each site's last sync).",
    head: ['Site', 'Severity', 'Finding'],
    rows: s.items.map((f) => [f.site, f.severity, f.message]),
    more: s.more,
    empty: '',
  });
  out.push({
    title: 'Changes made',
    lead: m.changes.total
      ? `${count(m.changes.total, 'change')} made through the dashboard.`
      : 'No changes were made through the dashboard.',
    head: ['When', 'By', 'Action', 'Site and detail'],
    rows: m.changes.items.map((c) => [when(c.at), c.who, c.action.replace(/-v1$/, '').replace(/-/g, ' '), c.detail]),
    more: m.changes.more,
    empty: '',
  });
  if (m.costs)
    out.push({
      title: 'Costs',
      lead: `${money(m.costs.monthly)} a month; ${money(m.costs.period_total)} for this period.`,
      head: ['Cost', 'Type', 'Renews', 'A month'],
      rows: m.costs.items.map((c) => [c.name, c.product_type, c.frequency, money(c.monthly)]),
      more: m.costs.more,
      empty: '',
    });
  return out;
}

const periodLine = (m: ReportModel) => `${m.period.from} to ${m.period.to} (${m.period.time_zone})`;

/** The text part: the same sections, one line per row. */
export function reportText(m: ReportModel): string {
  const lines = [m.title, m.scope_label, `Period: ${periodLine(m)}`, `Sites: ${m.sites.total}`, ''];
  for (const s of sections(m)) {
    lines.push(s.title.toUpperCase(), s.lead);
    if (s.note) lines.push(s.note);
    for (const r of s.rows) lines.push(`- ${r.join(' | ')}`);
    if (s.more) lines.push(`  ${more(s.more)}`);
    lines.push('');
  }
  lines.push(`Sites: ${m.sites.items.map((x) => x.name || x.url).join(', ')}${m.sites.more ? `, ${more(m.sites.more)}` : ''}`, '');
  if (m.branding.footer) lines.push('--', m.branding.footer);
  lines.push(`Generated ${when(m.generated_at)} by ${m.branding.name}.`);
  return lines.join('\n');
}

function logoTag(m: ReportModel, style: string): string {
  const logo = m.branding.logo;
  return logo && LOGO_URL.test(logo) ? `<img src="${e(logo)}" alt="${e(m.branding.name)}" style="${style}">` : '';
}

/** The HTML e-mail: one centred table, inline styles only. */
export function reportEmailHtml(m: ReportModel): string {
  const primary = color(m.branding.primary_color, '#1d2327');
  const accent = color(m.branding.accent_color, '#2271b1');
  const body = sections(m)
    .map((s) => {
      const table = s.rows.length
        ? `<table class="t" role="presentation" width="100%" cellpadding="0" cellspacing="0">` +
          `<tr>${s.head.map((h) => `<th>${e(h)}</th>`).join('')}</tr>` +
          s.rows.map((r) => `<tr>${r.map((c) => `<td>${e(c)}</td>`).join('')}</tr>`).join('') +
          `</table>`
        : '';
      return (
        `<h2 style="margin:24px 0 4px;font-size:17px;color:${primary};border-bottom:2px solid ${accent};padding-bottom:4px">${e(s.title)}</h2>` +
        `<p style="margin:4px 0;font-size:14px">${e(s.lead)}</p>` +
        (s.note ? `<p style="margin:4px 0;font-size:12px;color:#646970">${e(s.note)}</p>` : '') +
        table +
        (s.more ? `<p style="margin:4px 0;font-size:12px;color:#646970">${e(more(s.more))}</p>` : '')
      );
    })
    .join('');
  const footer = m.branding.footer ? e(m.branding.footer).replace(/\n/g, '<br>') : '';
  return (
    `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${e(reportSubject(m))}</title>` +
    // Table cells styled once in the head (mail clients that drop <style> still show a plain table): a report of
    // hundreds of rows stays small enough not to be clipped.
    `<style>.t{border-collapse:collapse;margin:6px 0 0}.t th,.t td{padding:6px 8px;border-bottom:1px solid #e2e4e7;text-align:left;vertical-align:top;font-size:13px}.t th{color:#50575e;font-weight:600}</style></head>` +
    `<body style="margin:0;padding:0;background:#f0f0f1;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;color:#1d2327">` +
    `<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td align="center" style="padding:16px">` +
    `<table role="presentation" width="680" cellpadding="0" cellspacing="0" style="max-width:680px;background:#fff;border-radius:6px">` +
    `<tr><td style="background:${primary};color:#fff;padding:18px 24px;border-radius:6px 6px 0 0">` +
    logoTag(m, 'max-height:48px;max-width:200px;display:block;margin-bottom:8px') +
    `<div style="font-size:13px;opacity:.85">${e(m.branding.name)}</div>` +
    `<div style="font-size:21px;font-weight:600">${e(m.title)}</div>` +
    `<div style="font-size:13px;opacity:.85">${e(m.scope_label)} · ${e(periodLine(m))} · ${m.sites.total} sites</div></td></tr>` +
    `<tr><td style="padding:8px 24px 24px">${body}</td></tr>` +
    `<tr><td style="padding:14px 24px;border-top:1px solid #e2e4e7;font-size:12px;color:#646970">${footer}${footer ? '<br>' : ''}Generated ${e(when(m.generated_at))}.</td></tr>` +
    `</table></td></tr></table></body></html>`
  );
}

/** The standalone printable page: a whole document with screen and print CSS (A4, tables that do not split rows). */
export function reportPage(m: ReportModel): string {
  const primary = color(m.branding.primary_color, '#1d2327');
  const accent = color(m.branding.accent_color, '#2271b1');
  const body = sections(m)
    .map(
      (s) =>
        `<section><h2>${e(s.title)}</h2><p class="lead">${e(s.lead)}</p>` +
        (s.note ? `<p class="note">${e(s.note)}</p>` : '') +
        (s.rows.length
          ? `<table><thead><tr>${s.head.map((h) => `<th>${e(h)}</th>`).join('')}</tr></thead><tbody>` +
            s.rows.map((r) => `<tr>${r.map((c) => `<td>${e(c)}</td>`).join('')}</tr>`).join('') +
            `</tbody></table>`
          : '') +
        (s.more ? `<p class="note">${e(more(s.more))}</p>` : '') +
        `</section>`,
    )
    .join('\n');
  const sitesLine = m.sites.items.map((x) => e(x.name || x.url)).join(', ') + (m.sites.more ? `, ${more(m.sites.more)}` : '');
  const footer = m.branding.footer ? `<div>${e(m.branding.footer).replace(/\n/g, '<br>')}</div>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src https: data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(reportSubject(m))}</title>
<style>
:root{--primary:${primary};--accent:${accent}}
*{box-sizing:border-box}
body{margin:0;background:#f0f0f1;color:#1d2327;font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:900px;margin:24px auto;background:#fff;padding:0 0 24px;border-radius:6px;box-shadow:0 1px 3px rgba(0,0,0,.1)}
header{background:var(--primary);color:#fff;padding:22px 32px;border-radius:6px 6px 0 0;display:flex;gap:20px;align-items:center}
header img{max-height:56px;max-width:200px}
header .agency{opacity:.85;font-size:13px}
header h1{margin:2px 0;font-size:24px}
header .meta{opacity:.85;font-size:13px}
section{padding:0 32px}
h2{color:var(--primary);font-size:18px;margin:26px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--accent)}
.lead{margin:6px 0}
.note{color:#646970;font-size:12px;margin:4px 0}
table{width:100%;border-collapse:collapse;margin-top:6px}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid #e2e4e7;font-size:12.5px}
th{color:#50575e;font-weight:600;background:#f6f7f7}
footer{margin:28px 32px 0;padding-top:12px;border-top:1px solid #e2e4e7;color:#646970;font-size:12px}
@page{size:A4;margin:14mm 12mm}
@media print{
  body{background:#fff;font-size:11pt}
  main{margin:0;max-width:none;box-shadow:none;border-radius:0}
  header{border-radius:0;-webkit-print-color-adjust:exact;print-color-adjust:exact}
  section{break-inside:auto}
  h2{break-after:avoid}
  tr{break-inside:avoid}
  thead{display:table-header-group}
}
</style></head>
<body><main>
<header>${logoTag(m, '')}<div><div class="agency">${e(m.branding.name)}</div><h1>${e(m.title)}</h1><div class="meta">${e(m.scope_label)} · ${e(periodLine(m))} · ${m.sites.total} sites</div></div></header>
${body}
<section><h2>Sites</h2><p class="lead">${sitesLine}</p></section>
<footer>${footer}<div>Generated ${e(when(m.generated_at))}.</div></footer>
</main></body></html>
`;
}
