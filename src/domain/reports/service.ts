// Client reports (issue 31 part 3): what was done for a client (or a tag, or some sites) over a period, white-labelled,
// previewed, generated into the archive, sent over an e-mail notification channel, and scheduled per client (monthly on
// a day or weekly on a weekday, at a time, in the client's time zone).
//
// Schedules are claimed once across `serve` processes the way update policies claim a window: the process that first
// inserts the archive record keyed `schedule:<client>:<period start>` in a store write (serialised across processes on
// both engines) sends it; others see the record and do nothing. A claim lasts CLAIM_MS: a process that died while
// sending leaves a claim that runs out, and the next tick (any process's) sends it again. A failed scheduled send is
// retried MAX_SEND_ATTEMPTS times in all, RETRY_MS × 5ⁿ apart. The clock is `now` (tests move it); nothing sleeps.
import { ServiceError, errors } from '../../core/errors.js';
import { callScope } from '../../core/scope.js';
import type { Config } from '../../config.js';
import { log } from '../../log.js';
import type { Store, Tx } from '../../store/engine.js';
import type { ChannelRecord } from '../../store/notification-records.js';
import type { ClientRecord, SiteRecord } from '../../store/records.js';
import { WEEKDAY_NAMES } from '../../store/report-records.js';
import type {
  Branding,
  ClientReportRecord,
  ReportSchedule,
  ReportScope,
  ReportSettingsRecord,
  VulnerabilityLogRecord,
} from '../../store/report-records.js';
import type { ClientService } from '../clients.js';
import type { CostService } from '../costs.js';
import type { FleetSecurityService } from '../fleet-security.js';
import { PROCESS_OWNER } from '../leases.js';
import type { NotificationService } from '../notifications/service.js';
import { MAX_RECIPIENTS } from '../notifications/service.js';
import { SEND_TIMEOUT_MS, Senders } from '../notifications/senders.js';
import type { SettingsService } from '../settings.js';
import type { SiteService } from '../sites.js';
import type { TagService } from '../tags.js';
import type { VulnEvent } from '../vulnerabilities/service.js';
import { gatherReport, type ReportModel } from './content.js';
import { checkZone, datesPeriod, lastDue, nextDue, presetPeriod, type Period, type PeriodPreset } from './period.js';
import { LOGO_URL, reportEmailHtml, reportPage, reportSubject, reportText } from './render.js';

/** Reports kept in the archive (the oldest go first). */
export const MAX_ARCHIVED = 1000;
/** Sites one report covers at most. */
export const MAX_REPORT_SITES = 5000;
/** A logo given as a data: URL is at most this many characters (about 48 KiB of image). */
export const MAX_LOGO_CHARS = 65_536;
export const MAX_FOOTER_CHARS = 1000;
/** Vulnerability log entries kept (the oldest go first). */
export const VULN_LOG_MAX = 20_000;
export const MAX_SEND_ATTEMPTS = 3;
/** A claim on a report being sent: past it, another process may send it (the sender died). */
export const CLAIM_MS = 5 * 60_000;
/** How often a `serve` process looks for due schedules (its own tick; tests call tick(now)). */
export const SCHEDULE_EVERY_MS = 15_000;

const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/;
const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const HEX = /^#[0-9a-fA-F]{6}$/;

export const DEFAULT_BRANDING: Branding = {
  name: 'sitefleet',
  logo: '',
  primary_color: '#1d2327',
  accent_color: '#2271b1',
  footer: '',
};

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

export interface ReportTarget {
  client_id?: number;
  tag_id?: number;
  site_ids?: number[];
}
export interface PeriodInput {
  period?: PeriodPreset;
  from?: string;
  to?: string;
  time_zone?: string;
}
export interface Rendered {
  subject: string;
  html: string;
  text: string;
  page: string;
}

export interface SettingsPatch {
  branding?: Partial<Branding>;
  time_zone?: string;
  recipients?: string[];
  channel_id?: number | null;
  schedule?: ReportSchedule | null;
}

export const reportNotFound = (id: number) => new ServiceError('svc_report_not_found', `No client report found with ID ${id}.`, 404);

export class ReportService {
  now: () => number = Date.now;
  readonly owner: string;
  /** The first retry's wait; each next one is five times longer. */
  retryMs = 5 * 60_000;
  private readonly senders: Senders;
  private lastTick = -Infinity;
  private vulnLowest = 1;

  constructor(
    private readonly store: Store,
    config: Config,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly clients: ClientService,
    private readonly costs: CostService,
    private readonly settingsService: SettingsService,
    private readonly fleetSecurity: FleetSecurityService,
    private readonly notifications: NotificationService,
    opts: { tlsCa?: string | Buffer; owner?: string } = {},
  ) {
    this.owner = opts.owner ?? PROCESS_OWNER;
    this.senders = new Senders({ allowPrivate: config.allowPrivateSites, timeoutMs: SEND_TIMEOUT_MS, tlsCa: opts.tlsCa });
  }

  // ---- settings -------------------------------------------------------------------------------------------

  private record(id: number): ReportSettingsRecord | undefined {
    return this.store.get<ReportSettingsRecord>('report_settings', id);
  }

  /** The agency's branding, every field set. */
  agencyBranding(): Branding {
    return { ...DEFAULT_BRANDING, ...(this.record(0)?.branding ?? {}) };
  }

  /** The settings of the agency (clientId null) or of a client (its overrides, zone, recipients, schedule). */
  settings(clientId: number | null): ReportSettingsRecord & { effective_branding: Branding; next_run_at: string | null } {
    if (clientId !== null) this.clients.resolve(clientId);
    const id = clientId ?? 0;
    const rec = this.record(id) ?? {
      id,
      branding: id ? {} : { ...DEFAULT_BRANDING },
      time_zone: '',
      recipients: [],
      channel_id: null,
      schedule: null,
      schedule_since: null,
      updated_at: '',
    };
    const effective = id ? { ...this.agencyBranding(), ...rec.branding } : this.agencyBranding();
    const next = rec.schedule ? iso(nextDue(rec.schedule, rec.time_zone || 'UTC', this.now())) : null;
    return { ...rec, branding: id ? rec.branding : effective, effective_branding: effective, next_run_at: next };
  }

  private checkBranding(b: Partial<Branding>, agency: boolean): Partial<Branding> {
    const out: Partial<Branding> = {};
    for (const [k, v] of Object.entries(b) as Array<[keyof Branding, string | undefined | null]>) {
      // A client's override of '' or null goes back to the agency's value.
      if (v === undefined) continue;
      if (v === null || (v === '' && !agency && k !== 'logo' && k !== 'footer')) continue;
      if ((k === 'primary_color' || k === 'accent_color') && !HEX.test(v))
        throw new ServiceError('svc_invalid_branding', `${k} must be a colour as #RRGGBB.`, 400);
      if (k === 'logo' && v !== '') {
        if (v.length > MAX_LOGO_CHARS)
          throw new ServiceError('svc_invalid_branding', `The logo is ${v.length} characters long; at most ${MAX_LOGO_CHARS}.`, 400);
        if (!LOGO_URL.test(v))
          throw new ServiceError(
            'svc_invalid_branding',
            'The logo must be an https URL or a data: URL of a PNG, JPEG, GIF or WebP image (base64).',
            400,
          );
      }
      if (k === 'footer' && v.length > MAX_FOOTER_CHARS)
        throw new ServiceError('svc_invalid_branding', `The footer is at most ${MAX_FOOTER_CHARS} characters.`, 400);
      if (k === 'name' && (!v.trim() || v.length > 100))
        throw new ServiceError('svc_invalid_branding', 'The name takes 1 to 100 characters.', 400);
      out[k] = k === 'name' ? v.trim() : v;
    }
    return out;
  }

  private checkRecipients(list: string[]): string[] {
    const out = [...new Set(list.map((r) => r.trim().toLowerCase()).filter(Boolean))];
    if (out.length > MAX_RECIPIENTS) throw new ServiceError('svc_invalid_recipients', `At most ${MAX_RECIPIENTS} recipients.`, 400);
    const bad = out.find((r) => !EMAIL.test(r) || r.length > 254);
    if (bad !== undefined) throw new ServiceError('svc_invalid_recipients', `"${bad.slice(0, 100)}" is not an e-mail address.`, 400);
    return out;
  }

  private checkSchedule(s: ReportSchedule): ReportSchedule {
    const bad = (m: string) => new ServiceError('svc_invalid_schedule', m, 400);
    if (!HHMM.test(s.time)) throw bad('A schedule takes its time as "HH:MM" (24-hour).');
    const given = s as { day?: number; weekday?: string };
    if (s.frequency === 'monthly') {
      if (given.weekday !== undefined) throw bad('A monthly schedule takes a day, not a weekday.');
      if (!Number.isInteger(s.day) || s.day < 1 || s.day > 28)
        throw bad('A monthly schedule takes a day from 1 to 28 (every month has it).');
      return { frequency: 'monthly', day: s.day, time: s.time };
    }
    if (given.day !== undefined) throw bad('A weekly schedule takes a weekday, not a day.');
    if (!WEEKDAY_NAMES.includes(s.weekday)) throw bad('A weekly schedule takes a weekday: mon, tue, wed, thu, fri, sat or sun.');
    return { frequency: 'weekly', weekday: s.weekday, time: s.time };
  }

  private emailChannel(id: number): ChannelRecord {
    const c = this.notifications.channel(id);
    if (c.type !== 'email')
      throw new ServiceError('svc_invalid_channel', `Channel ${id} is a ${c.type} channel: reports go out on an e-mail channel.`, 400);
    return c;
  }

  async updateSettings(clientId: number | null, patch: SettingsPatch) {
    if (clientId !== null) this.clients.resolve(clientId);
    if (clientId === null && patch.schedule !== undefined)
      throw new ServiceError('svc_invalid_schedule', 'Schedules are per client: give client_id.', 400);
    const id = clientId ?? 0;
    const branding = patch.branding ? this.checkBranding(patch.branding, id === 0) : undefined;
    const zone = patch.time_zone !== undefined ? (patch.time_zone === '' ? '' : checkZone(patch.time_zone)) : undefined;
    const recipients = patch.recipients !== undefined ? this.checkRecipients(patch.recipients) : undefined;
    if (patch.channel_id !== undefined && patch.channel_id !== null) this.emailChannel(patch.channel_id);
    const schedule = patch.schedule ? this.checkSchedule(patch.schedule) : patch.schedule;
    const at = iso(this.now());
    await this.store.write((tx) => {
      if (clientId !== null && !tx.get('clients', clientId)) throw errors.clientNotFound(clientId);
      const cur = tx.get<ReportSettingsRecord>('report_settings', id) ?? {
        id,
        branding: {},
        time_zone: '',
        recipients: [],
        channel_id: null,
        schedule: null,
        schedule_since: null,
        updated_at: at,
      };
      const mergedBranding = { ...cur.branding };
      if (patch.branding)
        for (const [k, v] of Object.entries(patch.branding) as Array<[keyof Branding, string | null | undefined]>) {
          if (v === undefined) continue;
          if (k in branding!) mergedBranding[k] = branding![k];
          else delete mergedBranding[k]; // a client's '' or null: back to the agency's
        }
      const sched = schedule !== undefined ? schedule : cur.schedule;
      tx.put<ReportSettingsRecord>('report_settings', {
        ...cur,
        branding: mergedBranding,
        time_zone: zone ?? cur.time_zone,
        recipients: recipients ?? cur.recipients,
        channel_id: patch.channel_id !== undefined ? patch.channel_id : cur.channel_id,
        schedule: sched,
        schedule_since: schedule !== undefined ? (sched ? at : null) : cur.schedule_since,
        updated_at: at,
      });
    });
    return this.settings(clientId);
  }

  /** A removed client's report settings go with it (same write); its archived reports stay. */
  forgetClient(tx: Tx, clientId: number): void {
    if (clientId > 0) tx.delete('report_settings', clientId);
  }

  /** The client's channel, else the agency's, else the first e-mail channel (a deleted one is passed over). */
  private channelFor(clientId: number | null): ChannelRecord {
    for (const id of [clientId, 0]) {
      const c = id === null ? null : this.record(id)?.channel_id;
      if (c) {
        const ch = this.notifications.listChannels().find((x) => x.id === c && x.type === 'email');
        if (ch) return ch;
      }
    }
    const first = this.notifications.listChannels().find((c) => c.type === 'email');
    if (!first)
      throw new ServiceError(
        'svc_no_email_channel',
        'No e-mail channel to send reports on: add one (add-notification-channel-v1 with type "email") first.',
        409,
      );
    return first;
  }

  // ---- building -------------------------------------------------------------------------------------------

  private target(t: ReportTarget): { scope: ReportScope; sites: SiteRecord[]; client: ClientRecord | null; label: string } {
    const given = [t.client_id !== undefined, t.tag_id !== undefined, t.site_ids !== undefined].filter(Boolean).length;
    if (given !== 1) throw new ServiceError('svc_invalid_target', 'Give exactly one of client_id, tag_id or site_ids.', 400);
    let sites: SiteRecord[];
    let out: Omit<ReturnType<ReportService['target']>, 'sites'>;
    if (t.client_id !== undefined) {
      const c = this.clients.resolve(t.client_id);
      sites = this.clients.siteIds(c.id).flatMap((id) => this.sites.get(id) ?? []);
      out = { scope: { kind: 'client', id: c.id }, client: c, label: c.name };
    } else if (t.tag_id !== undefined) {
      const tag = this.tags.resolve(t.tag_id);
      sites = tag.site_ids.flatMap((id) => this.sites.get(id) ?? []);
      out = { scope: { kind: 'tag', id: tag.id }, client: null, label: `Tag ${tag.name}` };
    } else {
      const ids = [...new Set(t.site_ids)];
      if (!ids.length) throw new ServiceError('svc_invalid_target', 'site_ids names no site.', 400);
      const missing = ids.filter((id) => !this.sites.get(id));
      if (missing.length)
        throw new ServiceError('svc_site_not_found', `No site found with ID ${missing.slice(0, 20).join(', ')}.`, 404, {
          site_ids: missing.slice(0, 100),
        });
      sites = ids.map((id) => this.sites.get(id)!);
      out = {
        scope: { kind: 'sites', ids: ids.sort((a, b) => a - b) },
        client: null,
        label: `${ids.length} site${ids.length === 1 ? '' : 's'}`,
      };
    }
    if (sites.length > MAX_REPORT_SITES)
      throw new ServiceError(
        'svc_too_many_sites',
        `A report covers at most ${MAX_REPORT_SITES} sites; this one names ${sites.length}.`,
        400,
      );
    return { ...out, sites };
  }

  private period(p: PeriodInput, zone: string): Period {
    const z = checkZone(p.time_zone ?? zone);
    const now = this.now();
    if (p.from !== undefined || p.to !== undefined) {
      if (p.period !== undefined) throw new ServiceError('svc_invalid_period', 'Give a period preset or from and to, not both.', 400);
      if (p.from === undefined || p.to === undefined) throw new ServiceError('svc_invalid_period', 'Give both from and to.', 400);
      return datesPeriod(p.from, p.to, z, now);
    }
    return presetPeriod(p.period ?? 'last_month', z, now);
  }

  private periodLabel(p: Period): string {
    const [fy, fm, fd] = p.from.split('-').map(Number) as [number, number, number];
    const last = new Date(Date.UTC(fy, fm, 0)).getUTCDate();
    if (fd === 1 && p.to === `${p.from.slice(0, 8)}${String(last).padStart(2, '0')}`) return `${MONTHS[fm - 1]} ${fy}`;
    return `${p.from} to ${p.to}`;
  }

  /** The model of a report for a target and period (nothing written). */
  async build(
    t: ReportTarget,
    p: PeriodInput,
  ): Promise<{ model: ReportModel; scope: ReportScope; client: ClientRecord | null; period: Period }> {
    const tg = this.target(t);
    const zone = tg.client ? this.record(tg.client.id)?.time_zone || 'UTC' : this.record(0)?.time_zone || 'UTC';
    const period = this.period(p, zone);
    return { ...(await this.modelFor(tg, period)), scope: tg.scope, client: tg.client, period };
  }

  private async modelFor(
    tg: { sites: SiteRecord[]; client: ClientRecord | null; label: string },
    period: Period,
  ): Promise<{ model: ReportModel }> {
    const security = await this.fleetSecurity.sitesWithIssues('low');
    const branding = tg.client ? this.settings(tg.client.id).effective_branding : this.agencyBranding();
    const model = await gatherReport(
      {
        store: this.store,
        costs: this.settingsService.moduleOn('cost-tracker') ? this.costs : null,
        security,
      },
      { title: `Website report — ${this.periodLabel(period)}`, scope_label: tg.label, branding },
      tg.sites,
      period,
      this.now(),
    );
    return { model };
  }

  render(model: ReportModel): Rendered {
    return { subject: reportSubject(model), html: reportEmailHtml(model), text: reportText(model), page: reportPage(model) };
  }

  /** Who a report goes to: the client's e-mail, the client's extra recipients, and the call's. */
  private recipientsFor(client: ClientRecord | null, extra: string[]): string[] {
    const list = [...(client?.email ? [client.email] : []), ...(client ? (this.record(client.id)?.recipients ?? []) : []), ...extra];
    return this.checkRecipients(list);
  }

  // ---- generating and sending -----------------------------------------------------------------------------

  /**
   * Generate a report into the archive; with `send`, send it now on the e-mail channel (the answer says whether it
   * went). Checks everything (target, period, channel, recipients) before writing anything.
   */
  async generate(t: ReportTarget, p: PeriodInput, opts: { send: boolean; recipients?: string[]; by: string }): Promise<ClientReportRecord> {
    const built = await this.build(t, p);
    let recipients: string[] = [];
    let channel: ChannelRecord | null = null;
    if (opts.send) {
      channel = this.channelFor(built.client?.id ?? null);
      recipients = this.recipientsFor(built.client, opts.recipients ?? []);
      if (!recipients.length)
        throw new ServiceError(
          'svc_no_recipients',
          built.client
            ? `Client ${built.client.id} has no e-mail and no extra recipients: give recipients.`
            : 'A report of a tag or of sites goes to the recipients given: give recipients.',
          400,
        );
    } else if (opts.recipients?.length)
      throw new ServiceError('svc_invalid_input', 'recipients are for a report that is sent (send: true).', 400);
    const now = this.now();
    const rec = await this.store.write((tx) =>
      this.insert(tx, {
        scope: built.scope,
        client_id: built.client?.id ?? null,
        title: built.model.title,
        period: { ...this.periodView(built.period) },
        content: built.model,
        subject: reportSubject(built.model),
        send: opts.send,
        recipients,
        channel_id: channel?.id ?? null,
        status: opts.send ? 'sending' : 'generated',
        last_error: null,
        attempts: 0,
        schedule_key: null,
        claim_owner: opts.send ? this.owner : null,
        claim_until: opts.send ? now + CLAIM_MS : 0,
        next_attempt_at: 0,
        created_by: opts.by,
        created_at: iso(now),
        sent_at: null,
      }),
    );
    return opts.send ? this.deliver(rec, now) : rec;
  }

  private periodView(p: Period): ClientReportRecord['period'] {
    return { from: p.from, to: p.to, time_zone: p.time_zone, from_at: iso(p.from_at), to_at: iso(p.to_at) };
  }

  private insert(tx: Tx, r: Omit<ClientReportRecord, 'id'>): ClientReportRecord {
    const rec = tx.insert<ClientReportRecord>('client_reports', r);
    const all = [...tx.all<ClientReportRecord>('client_reports')];
    if (all.length > MAX_ARCHIVED)
      for (const old of all.sort((a, b) => a.id - b.id).slice(0, all.length - MAX_ARCHIVED))
        if (old.status !== 'sending') tx.delete('client_reports', old.id);
    return rec;
  }

  /** Send a report this process has claimed; record how it ended (a failed scheduled one waits for its retry). */
  private async deliver(rec: ClientReportRecord, at: number): Promise<ClientReportRecord> {
    const channel = rec.channel_id === null ? undefined : this.store.get<ChannelRecord>('notification_channels', rec.channel_id);
    let error: string | null;
    if (!channel || channel.type !== 'email') error = 'The e-mail channel was deleted.';
    else {
      const r = this.render(rec.content as ReportModel);
      error = (
        await this.senders.mail(channel.smtp!, channel.secret, { to: rec.recipients, subject: r.subject, text: r.text, html: r.html })
      ).error;
    }
    // The tick's clock, moved on by how long the send took.
    const now = at + Math.max(0, this.now() - at);
    const out = await this.store.write((tx) => {
      const cur = tx.get<ClientReportRecord>('client_reports', rec.id);
      if (!cur || cur.claim_owner !== this.owner) return cur ?? rec;
      const attempts = cur.attempts + 1;
      const retry = error !== null && cur.schedule_key !== null && attempts < MAX_SEND_ATTEMPTS && !!channel;
      return tx.put<ClientReportRecord>('client_reports', {
        ...cur,
        attempts,
        status: error ? 'failed' : 'sent',
        last_error: error,
        claim_owner: null,
        claim_until: 0,
        next_attempt_at: retry ? now + this.retryMs * 5 ** (attempts - 1) : 0,
        sent_at: error ? null : iso(now),
      });
    });
    if (error) log('warn', 'client report not sent', { report: rec.id, attempt: rec.attempts + 1, err: error });
    return out;
  }

  // ---- the archive ----------------------------------------------------------------------------------------

  get(id: number): ClientReportRecord {
    const r = this.store.get<ClientReportRecord>('client_reports', id);
    if (!r || !this.sees(r)) throw reportNotFound(id);
    return r;
  }

  /**
   * Whether the running call may see an archived report (issue 32): outside a scope always; inside one when the scope
   * names the report's client or tag, or every site the report covers is in it (its site list, when not cut). Anything
   * else answers as missing.
   */
  private sees(r: ClientReportRecord): boolean {
    const scope = callScope();
    if (!scope) return true;
    if (r.scope.kind === 'client' && scope.clients.includes(r.scope.id)) return true;
    if (r.scope.kind === 'tag' && scope.tags.includes(r.scope.id)) return true;
    const sites = (r.content as ReportModel).sites;
    return sites.more === 0 && this.sites.access.seesAll(sites.items.map((x) => x.id));
  }

  /** Newest first. */
  list(f: { client_id?: number; status?: ClientReportRecord['status'] }): ClientReportRecord[] {
    const all = [...this.store.all<ClientReportRecord>('client_reports')].filter((r) => this.sees(r));
    if (f.client_id !== undefined && !this.clients.get(f.client_id) && !all.some((r) => r.client_id === f.client_id))
      throw errors.clientNotFound(f.client_id);
    return all
      .filter((r) => (f.client_id === undefined || r.client_id === f.client_id) && (f.status === undefined || r.status === f.status))
      .sort((a, b) => b.id - a.id);
  }

  // ---- schedules ------------------------------------------------------------------------------------------

  /** The jobs runner's tick hook: looks for due schedules every SCHEDULE_EVERY_MS of real time. */
  async scheduledTick(): Promise<void> {
    const t = Date.now();
    if (t - this.lastTick < SCHEDULE_EVERY_MS) return;
    this.lastTick = t;
    await this.tick();
  }

  /**
   * Sends every scheduled report due at `now` that no process has claimed, and retries those whose send failed or
   * whose sender died. Answers the reports this call sent or tried.
   */
  async tick(now = this.now()): Promise<ClientReportRecord[]> {
    const done: ClientReportRecord[] = [];
    const keys = new Set<string>();
    for (const r of this.store.all<ClientReportRecord>('client_reports')) if (r.schedule_key) keys.add(r.schedule_key);
    for (const s of this.store.all<ReportSettingsRecord>('report_settings')) {
      if (!s.id || !s.schedule) continue;
      const client = this.clients.get(s.id);
      if (!client) continue;
      const zone = s.time_zone || 'UTC';
      const { due, period } = lastDue(s.schedule, zone, now);
      if (s.schedule_since && due < Date.parse(s.schedule_since)) continue;
      const key = `schedule:${client.id}:${period.from}`;
      if (keys.has(key)) continue;
      let rec: ClientReportRecord | null;
      try {
        const { model } = await this.modelFor(
          { sites: this.clients.siteIds(client.id).flatMap((id) => this.sites.get(id) ?? []), client, label: client.name },
          period,
        );
        let channel: ChannelRecord | null = null;
        let recipients: string[] = [];
        let problem: string | null = null;
        try {
          channel = this.channelFor(client.id);
          recipients = this.recipientsFor(client, []);
          if (!recipients.length) problem = `Client ${client.id} has no e-mail and no extra recipients.`;
        } catch (e) {
          problem = (e as Error).message;
        }
        rec = await this.store.write((tx) => {
          for (const r of tx.all<ClientReportRecord>('client_reports')) if (r.schedule_key === key) return null; // claimed elsewhere
          return this.insert(tx, {
            scope: { kind: 'client', id: client.id },
            client_id: client.id,
            title: model.title,
            period: this.periodView(period),
            content: model,
            subject: reportSubject(model),
            send: true,
            recipients,
            channel_id: channel?.id ?? null,
            status: problem ? 'failed' : 'sending',
            last_error: problem,
            attempts: problem ? 1 : 0,
            schedule_key: key,
            claim_owner: problem ? null : this.owner,
            claim_until: problem ? 0 : now + CLAIM_MS,
            next_attempt_at: 0,
            created_by: 'schedule',
            created_at: iso(now),
            sent_at: null,
          });
        });
      } catch (e) {
        log('error', 'scheduled client report failed', { client: client.id, err: String(e) });
        continue;
      }
      if (rec) done.push(rec.status === 'sending' ? await this.deliver(rec, now) : rec);
    }
    // Retries: a failed scheduled send whose wait is over, and a send whose claim ran out (its process died).
    for (const r of this.store.all<ClientReportRecord>('client_reports')) {
      const retry = r.status === 'failed' && r.next_attempt_at > 0 && r.next_attempt_at <= now && r.attempts < MAX_SEND_ATTEMPTS;
      const orphan = r.status === 'sending' && r.claim_until <= now;
      if (!retry && !orphan) continue;
      const claimed = await this.store.write((tx) => {
        const cur = tx.get<ClientReportRecord>('client_reports', r.id);
        if (!cur || cur.status !== r.status || cur.claim_until !== r.claim_until || cur.attempts !== r.attempts) return null;
        return tx.put<ClientReportRecord>('client_reports', {
          ...cur,
          status: 'sending',
          claim_owner: this.owner,
          claim_until: now + CLAIM_MS,
        });
      });
      if (claimed) done.push(await this.deliver(claimed, now));
    }
    return done;
  }

  // ---- the vulnerability log ------------------------------------------------------------------------------

  /** Records a vulnerability.found / .fixed event, one entry per site listed; trims the oldest past VULN_LOG_MAX. */
  async logVulnerability(e: VulnEvent): Promise<void> {
    const v = (e.data.vulnerability ?? {}) as { key?: string; title?: string; severity?: string | null };
    const installs = (e.data.installs ?? []) as Array<{
      site: { id: number; url: string };
      type: string;
      slug: string;
      version?: string | null;
      fixed_in?: string | null;
      old_version?: string | null;
    }>;
    if (!installs.length) return;
    const at = iso(this.now());
    const fixed = e.event === 'vulnerability.fixed';
    // The function may run more than once before it commits (the PostgreSQL engine's dry run): the hint of where the
    // oldest entry is moves only once the write is committed.
    const lowest = await this.store.write((tx) => {
      let top = 0;
      for (const i of installs)
        top = tx.insert<VulnerabilityLogRecord>('vulnerability_log', {
          at,
          event: fixed ? 'fixed' : 'found',
          site_id: i.site.id,
          site_url: i.site.url,
          key: String(v.key ?? ''),
          title: String(v.title ?? v.key ?? '').slice(0, 300),
          severity: v.severity ?? null,
          type: i.type,
          slug: i.slug,
          version: (fixed ? i.old_version : i.version) ?? null,
          fixed_in: (fixed ? i.version : i.fixed_in) ?? null,
        }).id;
      let count = this.store.count('vulnerability_log');
      let id = this.vulnLowest;
      for (; id <= top && count > VULN_LOG_MAX; id++) if (tx.delete('vulnerability_log', id)) count--;
      return id;
    });
    this.vulnLowest = Math.max(this.vulnLowest, lowest);
  }

  async stop(): Promise<void> {
    await this.senders.close();
  }
}
