// The cost tracker: costs (licences, hosting, services) that apply to sites directly, through tags
// (groups) or through clients; which sites and clients a cost covers; the next renewal; a site's totals.
//
// Rules kept here, with the reason for each:
// - Targets: sites[], groups[] and clients[] are unioned; at least one must name something, and every id
//   must exist (400 svc_invalid_input naming the list and the id). Deleting a site, tag or client removes it
//   from the costs that name it (forgetSite / forgetTag / forgetClient); a cost left without any target is
//   kept and reported (orphaned), never silently deleted: its money still has to be accounted for.
// - Next renewal: last_renewal plus whole periods (weekly = 7 days; monthly, quarterly, yearly = 1, 3, 12
//   calendar months, the day clamped to the month's end and counted from the original day, so Jan 31 gives
//   Feb 28, Mar 31, Apr 30), at least one period, the first that is today or later (UTC). Computed when
//   read so that it is never in the past. None for lifetime costs or without last_renewal / renewal_type.
// - Totals of a site: only active subscription costs count; a multi_site cost is split evenly over every
//   site it covers, a single_site cost counts in full on each; monthly equivalent = weekly × 52 / 12,
//   monthly × 1, quarterly / 3, yearly / 12, lifetime 0; total_yearly = 12 × the unrounded monthly sum;
//   both rounded to cents at the end (so a 130/year cost shows 10.83 a month and 130 a year).
import { callScope, unscoped } from '../core/scope.js';
import { ServiceError, errors } from '../core/errors.js';
import { byName } from '../core/collate.js';
import type { Store, Tx } from '../store/store.js';
import type {
  ClientRecord,
  CostRecord,
  CostStatus,
  LicenseType,
  PaymentType,
  ProductType,
  RenewalType,
  SiteRecord,
  TagRecord,
} from '../store/records.js';
import { RENEWAL_TYPES } from '../store/records.js';
import type { ClientService } from './clients.js';
import type { SiteService } from './sites.js';
import type { TagService } from './tags.js';

export interface CostFields {
  name: string;
  price: number;
  payment_type: PaymentType;
  product_type: ProductType;
  product_slug?: string;
  license_type?: LicenseType;
  renewal_type?: RenewalType | null;
  last_renewal?: string | null;
  payment_method?: string;
  cost_tracker_status?: CostStatus;
  url?: string | null;
  note?: string;
  product_color?: string | null;
  icon_hidden?: boolean;
  sites?: Array<number | string>;
  groups?: number[];
  clients?: number[];
}

export interface CostFilter {
  search?: string;
  include?: number[];
  exclude?: number[];
  status?: CostStatus[];
  category?: Array<ProductType | 'any'>;
  type?: PaymentType | 'any';
}

/** One cost as it weighs on one site. */
export interface SiteCost {
  cost: CostRecord;
  /** This site's part of the price: the price, or price / sites covered for a multi_site licence. */
  share: number;
  /** What the share adds to total_monthly (0 unless active and a subscription). */
  monthly: number;
}

const MONTHLY_FACTOR: Record<RenewalType, number> = { weekly: 52 / 12, monthly: 1, quarterly: 1 / 3, yearly: 1 / 12 };
const PERIOD_MONTHS: Record<Exclude<RenewalType, 'weekly'>, number> = { monthly: 1, quarterly: 3, yearly: 12 };
const DAY_MS = 86_400_000;

/** Rounds to cents, half away from zero, without binary noise (1.005 → 1.01). */
export const cents = (x: number): number => Math.round(Number((x * 100).toPrecision(12))) / 100;

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** The UTC calendar day (YYYY-MM-DD) of an ISO 8601 date or date-time, or null when it is not one. */
export function isoDay(value: string): string | null {
  const m = ISO_DATE.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, zone] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  // Date.UTC rolls Feb 30 over to Mar 2: a date that does not survive the round trip does not exist.
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return null;
  if (h === undefined) return day.toISOString().slice(0, 10);
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return null;
  const at = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}${zone ? normaliseZone(zone) : 'Z'}`);
  return Number.isNaN(at.getTime()) ? null : at.toISOString().slice(0, 10);
}

function normaliseZone(z: string): string {
  if (z.toUpperCase() === 'Z') return 'Z';
  return z.includes(':') ? z : `${z.slice(0, 3)}:${z.slice(3)}`;
}

const dayParts = (day: string) => day.split('-').map(Number) as [number, number, number];
const daysInMonth = (y: number, m0: number) => new Date(Date.UTC(y, m0 + 1, 0)).getUTCDate();

/** `day` plus `months` calendar months, the day of month clamped to the target month's length. */
function addMonths(day: string, months: number): string {
  const [y, m, d] = dayParts(day);
  const total = y * 12 + (m - 1) + months;
  const ty = Math.floor(total / 12);
  const tm = total - ty * 12;
  return new Date(Date.UTC(ty, tm, Math.min(d, daysInMonth(ty, tm)))).toISOString().slice(0, 10);
}

/** The first renewal after `last` (at least one period on) that is `today` or later; null if none. */
export function nextRenewal(c: Pick<CostRecord, 'payment_type' | 'renewal_type' | 'last_renewal'>, today: string): string | null {
  if (c.payment_type === 'lifetime' || !c.renewal_type || !c.last_renewal) return null;
  if (c.renewal_type === 'weekly') {
    const last = Date.parse(`${c.last_renewal}T00:00:00Z`);
    const weeks = Math.max(1, Math.ceil((Date.parse(`${today}T00:00:00Z`) - last) / (7 * DAY_MS)));
    return new Date(last + weeks * 7 * DAY_MS).toISOString().slice(0, 10);
  }
  const step = PERIOD_MONTHS[c.renewal_type];
  const [ly, lm] = dayParts(c.last_renewal);
  const [ty, tm] = dayParts(today);
  // Start just below the answer and walk: at most two steps.
  let k = Math.max(1, Math.floor(((ty - ly) * 12 + (tm - lm)) / step) - 1);
  let next = addMonths(c.last_renewal, k * step);
  while (next < today) next = addMonths(c.last_renewal, ++k * step);
  return next;
}

/** The cost's billing frequency in one word: its renewal type, or lifetime. */
export function frequencyOf(c: Pick<CostRecord, 'payment_type' | 'renewal_type'>): string {
  return c.payment_type === 'lifetime' ? 'lifetime' : (c.renewal_type ?? 'none');
}

const now = () => new Date().toISOString();

const sortIds = (ids: Iterable<number>) => [...new Set(ids)].sort((a, b) => a - b);

function invalid(list: 'sites' | 'groups' | 'clients', reason: string): ServiceError {
  return new ServiceError('svc_invalid_input', `Invalid ${list}: ${reason}`, 400, { params: { [list]: reason } });
}

const NO_TARGET = 'A cost needs at least one target: give sites (site IDs or domains), groups (tag IDs) or clients (client IDs).';

export class CostService {
  /** The clock for next renewals (tests set it). */
  clock: () => Date = () => new Date();

  private cacheKey = '';
  private sorted: CostRecord[] = [];
  private covered = new Map<number, number[]>();
  private bySite = new Map<number, number[]>();

  constructor(
    private readonly store: Store,
    private readonly sites: SiteService,
    private readonly tags: TagService,
    private readonly clients: ClientService,
    /** The product types and payment methods costs may name (dashboard settings, issue 21); unchecked without. */
    private readonly lists?: { assertProductType(slug: string): void; assertPaymentMethod(slug: string): void },
  ) {}

  today(): string {
    return this.clock().toISOString().slice(0, 10);
  }

  get(id: number): CostRecord | undefined {
    return this.store.get<CostRecord>('costs', id);
  }

  resolve(id: number): CostRecord {
    const c = this.get(id);
    if (!c) throw errors.costNotFound(id);
    return c;
  }

  /** Costs by name and the sites each covers; rebuilt when costs, sites, tags or clients change. */
  private index(): { sorted: CostRecord[]; covered: Map<number, number[]>; bySite: Map<number, number[]> } {
    // The fleet's index, kept for every caller: built outside the caller's scope (coveredSites cuts it to the scope).
    if (callScope()) return unscoped(() => this.index());
    const key = (['costs', 'sites', 'tags', 'clients'] as const).map((c) => this.store.version(c)).join(':');
    if (key !== this.cacheKey) {
      this.sorted = [...this.store.all<CostRecord>('costs')].sort(byName((c) => c.name));
      this.covered = new Map();
      this.bySite = new Map();
      for (const c of this.sorted) {
        const ids = new Set<number>();
        for (const s of c.sites) if (this.sites.get(s)) ids.add(s);
        for (const t of c.groups) for (const s of this.tags.get(t)?.site_ids ?? []) if (this.sites.get(s)) ids.add(s);
        for (const cl of c.clients) if (this.clients.get(cl)) for (const s of this.clients.siteIds(cl)) ids.add(s);
        const list = sortIds(ids);
        this.covered.set(c.id, list);
        for (const s of list) {
          const costs = this.bySite.get(s);
          if (costs) costs.push(c.id);
          else this.bySite.set(s, [c.id]);
        }
      }
      this.cacheKey = key;
    }
    return { sorted: this.sorted, covered: this.covered, bySite: this.bySite };
  }

  list(f: CostFilter): CostRecord[] {
    const search = f.search?.trim().toLowerCase();
    const include = f.include?.length ? new Set(f.include) : null;
    const exclude = f.exclude?.length ? new Set(f.exclude) : null;
    const status = f.status?.length ? new Set(f.status) : null;
    const category = f.category?.length && !f.category.includes('any') ? new Set(f.category) : null;
    const type = f.type && f.type !== 'any' ? f.type : null;
    return this.index().sorted.filter(
      (c) =>
        (!include || include.has(c.id)) &&
        (!exclude || !exclude.has(c.id)) &&
        (!status || status.has(c.cost_tracker_status)) &&
        (!category || category.has(c.product_type)) &&
        (!type || c.payment_type === type) &&
        (!search || String(c.id).includes(search) || c.name.toLowerCase().includes(search)),
    );
  }

  /** Ids of the existing sites a cost covers (directly, through its tags and its clients), ascending. */
  coveredSites(c: CostRecord): number[] {
    return this.sites.access.only(this.index().covered.get(c.id) ?? []);
  }

  /** The targets of a cost that still exist (a deleted one is removed on deletion; this guards old data). */
  targets(c: CostRecord): { sites: number[]; groups: number[]; clients: number[] } {
    return {
      sites: c.sites.filter((id) => this.sites.get(id)),
      groups: c.groups.filter((id) => this.tags.get(id)),
      clients: c.clients.filter((id) => this.clients.get(id)),
    };
  }

  orphaned(c: CostRecord): boolean {
    const t = this.targets(c);
    return !t.sites.length && !t.groups.length && !t.clients.length;
  }

  /** Costs covering a site, by name. */
  costsOfSite(siteId: number): CostRecord[] {
    const { sorted, bySite } = this.index();
    const ids = new Set(bySite.get(siteId) ?? []);
    return sorted.filter((c) => ids.has(c.id));
  }

  /** Costs naming a client or covering one of its sites, by name. */
  /** The costs naming a client as a target, and those it is the only target of (removing it leaves them orphaned). */
  namingClient(clientId: number): { naming: CostRecord[]; orphans: CostRecord[] } {
    const naming = this.list({}).filter((c) => c.clients.includes(clientId));
    const orphans = naming.filter((c) => {
      const t = this.targets(c);
      return !t.sites.length && !t.groups.length && t.clients.every((x) => x === clientId);
    });
    return { naming, orphans };
  }

  costsOfClient(clientId: number): CostRecord[] {
    const { sorted, bySite } = this.index();
    const ids = new Set<number>();
    for (const s of this.clients.siteIds(clientId)) for (const c of bySite.get(s) ?? []) ids.add(c);
    return sorted.filter((c) => ids.has(c.id) || c.clients.includes(clientId));
  }

  /** Clients a cost applies to (named, or owning a covered site), by name, with how many covered sites each owns. */
  clientsOfCost(c: CostRecord): Array<{ client: ClientRecord; sites_covered: number }> {
    const counts = new Map<number, number>();
    for (const id of c.clients) if (this.clients.get(id)) counts.set(id, 0);
    for (const s of this.coveredSites(c)) {
      const owner = this.sites.get(s)?.client_id;
      if (owner && this.clients.get(owner)) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    const order = byName<ClientRecord>((c) => c.name);
    return [...counts].map(([id, n]) => ({ client: this.clients.get(id)!, sites_covered: n })).sort((a, b) => order(a.client, b.client));
  }

  /** A site's costs with its share of each and the totals (rules at the top of this file). */
  siteCosts(siteId: number): { items: SiteCost[]; total_monthly: number; total_yearly: number } {
    let monthly = 0;
    const items = this.costsOfSite(siteId).map((cost) => {
      const covered = Math.max(1, this.coveredSites(cost).length);
      const share = cost.license_type === 'multi_site' ? cost.price / covered : cost.price;
      const counts = cost.cost_tracker_status === 'active' && cost.payment_type === 'subscription' && cost.renewal_type;
      const m = counts ? share * MONTHLY_FACTOR[cost.renewal_type!] : 0;
      monthly += m;
      return { cost, share, monthly: m };
    });
    return { items, total_monthly: cents(monthly), total_yearly: cents(monthly * 12) };
  }

  /** Validates and resolves target lists inside the write; unknown ids → 400 naming the list. */
  private resolveTargets(
    tx: Tx,
    input: Pick<CostFields, 'sites' | 'groups' | 'clients'>,
  ): Partial<Pick<CostRecord, 'sites' | 'groups' | 'clients'>> {
    const out: Partial<Pick<CostRecord, 'sites' | 'groups' | 'clients'>> = {};
    if (input.sites) {
      out.sites = sortIds(
        input.sites.map((ref) => {
          const s = this.sites.find(ref);
          if (!s || !tx.get<SiteRecord>('sites', s.id)) {
            throw invalid(
              'sites',
              typeof ref === 'number' || /^\d+$/.test(ref) ? `no site found with ID ${Number(ref)}.` : `no site found matching "${ref}".`,
            );
          }
          return s.id;
        }),
      );
    }
    if (input.groups) {
      for (const id of input.groups) if (!tx.get<TagRecord>('tags', id)) throw invalid('groups', `no tag found with ID ${id}.`);
      out.groups = sortIds(input.groups);
    }
    if (input.clients) {
      for (const id of input.clients) if (!tx.get<ClientRecord>('clients', id)) throw invalid('clients', `no client found with ID ${id}.`);
      out.clients = sortIds(input.clients);
    }
    return out;
  }

  /** What every stored cost must satisfy, checked after create and after each edit. */
  private check(c: Omit<CostRecord, 'id'>, changed: { product_type?: unknown; payment_method?: unknown } = c): void {
    // Only what is being written is checked against the lists: a stored value whose type was later renamed stays readable.
    if (changed.product_type !== undefined) this.lists?.assertProductType(c.product_type);
    if (changed.payment_method !== undefined) this.lists?.assertPaymentMethod(c.payment_method);
    if (!c.name)
      throw new ServiceError('svc_invalid_input', 'Cost name must not be empty.', 400, { params: { name: 'must not be empty' } });
    if (!c.sites.length && !c.groups.length && !c.clients.length) throw new ServiceError('svc_invalid_input', NO_TARGET, 400);
    if (c.payment_type === 'subscription' && !c.renewal_type) {
      throw new ServiceError('svc_invalid_input', `A subscription needs renewal_type, one of ${RENEWAL_TYPES.join(', ')}.`, 400, {
        params: { renewal_type: 'required for a subscription' },
      });
    }
  }

  private day(value: string | null | undefined): string | null {
    if (value === null || value === undefined || value === '') return null;
    const d = isoDay(value);
    if (!d)
      throw new ServiceError('svc_invalid_input', `Invalid last_renewal: "${value}" is not an ISO 8601 date.`, 400, {
        params: { last_renewal: 'not an ISO 8601 date' },
      });
    return d;
  }

  /** Records a cost in one durable write. */
  add(input: CostFields): Promise<CostRecord> {
    return this.store.write((tx) => this.create(tx, input));
  }

  /** Changes the fields given of a cost in one durable write. */
  edit(id: number, input: Partial<CostFields>): Promise<CostRecord> {
    return this.store.write((tx) => this.update(tx, id, input));
  }

  /** Deletes a cost (its sites, tags and clients are not touched). */
  remove(id: number): Promise<CostRecord> {
    return this.store.write((tx) => this.delete(tx, id));
  }

  create(tx: Tx, input: CostFields): CostRecord {
    const t = now();
    const rec: Omit<CostRecord, 'id'> = {
      name: input.name.trim(),
      price: input.price,
      payment_type: input.payment_type,
      product_type: input.product_type,
      product_slug: input.product_slug?.trim() ?? '',
      license_type: input.license_type ?? 'single_site',
      renewal_type: input.renewal_type ?? null,
      last_renewal: this.day(input.last_renewal),
      payment_method: input.payment_method?.trim() ?? '',
      cost_tracker_status: input.cost_tracker_status ?? 'active',
      url: input.url ?? '',
      note: input.note ?? '',
      product_color: input.product_color ?? null,
      icon_hidden: input.icon_hidden ?? false,
      sites: [],
      groups: [],
      clients: [],
      ...this.resolveTargets(tx, input),
      created_at: t,
      updated_at: t,
    };
    this.check(rec);
    return tx.insert<CostRecord>('costs', rec);
  }

  /** Changes only the fields given; a given target list replaces the stored one. */
  update(tx: Tx, id: number, input: Partial<CostFields>): CostRecord {
    const cur = tx.get<CostRecord>('costs', id);
    if (!cur) throw errors.costNotFound(id);
    const next: CostRecord = { ...cur, ...this.resolveTargets(tx, input), updated_at: now() };
    if (input.name !== undefined) next.name = input.name.trim();
    if (input.price !== undefined) next.price = input.price;
    if (input.payment_type !== undefined) next.payment_type = input.payment_type;
    if (input.product_type !== undefined) next.product_type = input.product_type;
    if (input.product_slug !== undefined) next.product_slug = input.product_slug.trim();
    if (input.license_type !== undefined) next.license_type = input.license_type;
    if (input.renewal_type !== undefined) next.renewal_type = input.renewal_type;
    if (input.last_renewal !== undefined) next.last_renewal = this.day(input.last_renewal);
    if (input.payment_method !== undefined) next.payment_method = input.payment_method.trim();
    if (input.cost_tracker_status !== undefined) next.cost_tracker_status = input.cost_tracker_status;
    if (input.url !== undefined) next.url = input.url ?? '';
    if (input.note !== undefined) next.note = input.note;
    if (input.product_color !== undefined) next.product_color = input.product_color;
    if (input.icon_hidden !== undefined) next.icon_hidden = input.icon_hidden;
    // Targets deleted since the cost was written do not count as targets.
    const live = {
      ...next,
      sites: next.sites.filter((s) => tx.get('sites', s)),
      groups: next.groups.filter((g) => tx.get('tags', g)),
      clients: next.clients.filter((c) => tx.get('clients', c)),
    };
    this.check(live, input);
    return tx.put<CostRecord>('costs', live);
  }

  delete(tx: Tx, id: number): CostRecord {
    const cur = tx.get<CostRecord>('costs', id);
    if (!cur) throw errors.costNotFound(id);
    tx.delete('costs', id);
    return cur;
  }

  private forget(tx: Tx, list: 'sites' | 'groups' | 'clients', id: number): void {
    for (const c of [...tx.all<CostRecord>('costs')]) {
      if (c[list].includes(id)) tx.put<CostRecord>('costs', { ...c, [list]: c[list].filter((x) => x !== id), updated_at: now() });
    }
  }

  /** A deleted site leaves every cost that names it (the cost stays, even without targets). */
  forgetSite(tx: Tx, siteId: number): void {
    this.forget(tx, 'sites', siteId);
  }
  forgetTag(tx: Tx, tagId: number): void {
    this.forget(tx, 'groups', tagId);
  }
  forgetClient(tx: Tx, clientId: number): void {
    this.forget(tx, 'clients', clientId);
  }
}
