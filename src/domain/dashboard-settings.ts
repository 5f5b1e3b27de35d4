// Dashboard settings that mean something in sitefleet (issue 21), stored durably (the settings collection, record
// 2) and applied for real: the automatic sync schedule (SyncScheduler), how many sites a sync works on at once, the
// queue threshold, and the cost tracker's product types and payment methods, which the cost abilities validate
// against. Everything else upstream's settings routes carry is answered 501 by the routes (routes/settings.ts).
import { ServiceError, errors } from '../core/errors.js';
import type { Config } from '../config.js';
import type { CostRecord, SiteRecord } from '../store/records.js';
import type { AuditService } from './audit.js';
import type { JobService } from './jobs.js';
import type { SiteService } from './sites.js';
import type { Store, Tx } from '../store/store.js';

export interface ProductTypeDef {
  slug: string;
  title: string;
  color: string;
  icon: string;
}
export interface PaymentMethodDef {
  slug: string;
  title: string;
}

export interface DashboardSettingsRecord {
  id: 2;
  /** Automatic syncs of every connected site a day: 0 (off) or 1–12, from sync_time (UTC) on, evenly spaced. */
  sync_frequency: number;
  sync_time: string;
  /** Sites a sync works on at once (sync-sites-v1 and sync jobs); null: the process's child concurrency. */
  sync_concurrency: number | null;
  /** Batches over this many sites become background jobs; null: the configured threshold. */
  queue_threshold: number | null;
  /** Whether update applies run in safe mode when the call does not say (issue 28); absent = true. */
  safe_updates?: boolean;
  /** The schedule slot last started (ISO), so that a slot runs once across processes. */
  last_scheduled_sync: string | null;
  product_types: ProductTypeDef[];
  payment_methods: PaymentMethodDef[];
}

export const MAX_LIST = 100;
export const MAX_SYNCS_A_DAY = 12;
export const DEFAULT_COLOR = '#34424D';
export const DEFAULT_ICON = 'deficon:folder open';
export const DEFAULT_PRODUCT_TYPES: readonly ProductTypeDef[] = [
  { slug: 'plugin', title: 'Plugin', color: '#34424D', icon: 'deficon:plug' },
  { slug: 'theme', title: 'Theme', color: '#34424D', icon: 'deficon:tint' },
  { slug: 'hosting', title: 'Hosting', color: '#34424D', icon: 'deficon:server' },
  { slug: 'service', title: 'Service', color: '#34424D', icon: 'deficon:handshake' },
  { slug: 'other', title: 'Other', color: '#34424D', icon: DEFAULT_ICON },
];
const DEFAULT_SLUGS = new Set(DEFAULT_PRODUCT_TYPES.map((p) => p.slug));
export const DEFAULT_PAYMENT_METHODS: readonly PaymentMethodDef[] = [
  { slug: 'paypal', title: 'PayPal' },
  { slug: 'stripe', title: 'Stripe' },
  { slug: 'credit_debit', title: 'Credit / debit card' },
  { slug: 'cash', title: 'Cash' },
  { slug: 'bank_transfer', title: 'Bank transfer' },
];

const DEFAULTS: DashboardSettingsRecord = {
  id: 2,
  sync_frequency: 0,
  sync_time: '00:00',
  sync_concurrency: null,
  queue_threshold: null,
  last_scheduled_sync: null,
  product_types: [...DEFAULT_PRODUCT_TYPES],
  payment_methods: [...DEFAULT_PAYMENT_METHODS],
};

/** WordPress's sanitize_title, as upstream makes slugs of titles: lower case, runs of anything else → "-". */
export function slugOf(title: string): string {
  return title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
}

export type SettingsPatch = Partial<
  Pick<DashboardSettingsRecord, 'sync_frequency' | 'sync_time' | 'sync_concurrency' | 'queue_threshold' | 'safe_updates'>
>;

export class DashboardSettings {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {}

  get(): DashboardSettingsRecord {
    return { ...DEFAULTS, ...this.store.get<DashboardSettingsRecord>('settings', 2) };
  }

  private cur(tx: Tx): DashboardSettingsRecord {
    return { ...DEFAULTS, ...tx.get<DashboardSettingsRecord>('settings', 2) };
  }

  syncConcurrency(): number {
    return Math.min(this.get().sync_concurrency ?? this.config.childConcurrency, this.config.childConcurrency);
  }

  queueThreshold(): number {
    return this.get().queue_threshold ?? this.config.queueThreshold;
  }

  /** Safe mode for update applies that do not say (on unless turned off). */
  safeUpdates(): boolean {
    return this.get().safe_updates ?? true;
  }

  async update(patch: SettingsPatch): Promise<DashboardSettingsRecord> {
    if (patch.sync_time !== undefined && !/^([01]\d|2[0-3]):[0-5]\d$/.test(patch.sync_time)) {
      throw new ServiceError('svc_invalid_input', `sync_time must be HH:MM (00:00–23:59), not "${patch.sync_time}".`, 400, {
        params: { sync_time: 'HH:MM' },
      });
    }
    if (patch.sync_concurrency != null && patch.sync_concurrency > this.config.childConcurrency) {
      throw new ServiceError(
        'svc_invalid_input',
        `sync_concurrency cannot exceed the server's child concurrency (${this.config.childConcurrency}, --child-concurrency).`,
        400,
        { params: { sync_concurrency: `at most ${this.config.childConcurrency}` } },
      );
    }
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      // A new schedule starts from now: slots that passed under the old one are not caught up.
      const schedule = patch.sync_frequency !== undefined || patch.sync_time !== undefined;
      return tx.put<DashboardSettingsRecord>('settings', {
        ...cur,
        ...patch,
        ...(schedule ? { last_scheduled_sync: new Date().toISOString() } : {}),
      });
    });
  }

  // ---- cost tracker: product types ----

  productTypes(): ProductTypeDef[] {
    return this.get().product_types;
  }
  paymentMethods(): PaymentMethodDef[] {
    return this.get().payment_methods;
  }

  /** For the cost abilities: a product type must be one of the list. */
  assertProductType(slug: string): void {
    const all = this.productTypes();
    if (!all.some((p) => p.slug === slug)) {
      throw new ServiceError(
        'svc_invalid_product_type',
        `Unknown product_type "${slug}". Product types: ${all.map((p) => p.slug).join(', ')} (settings: cost-tracker product types).`,
        400,
        { params: { product_type: 'unknown product type' } },
      );
    }
  }

  /** For the cost abilities: a payment method is "" (none) or one of the list. */
  assertPaymentMethod(slug: string): void {
    const all = this.paymentMethods();
    if (slug !== '' && !all.some((p) => p.slug === slug)) {
      throw new ServiceError(
        'svc_invalid_payment_method',
        `Unknown payment_method "${slug}". Payment methods: ${all.map((p) => p.slug).join(', ')} (settings: cost-tracker payment methods).`,
        400,
        { params: { payment_method: 'unknown payment method' } },
      );
    }
  }

  private inUse(tx: Tx, key: 'product_type' | 'payment_method', slug: string): number {
    let n = 0;
    for (const c of tx.all<CostRecord>('costs')) if (c[key] === slug) n++;
    return n;
  }

  async addProductType(i: { title: string; color?: string; icon?: string }): Promise<ProductTypeDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      const title = i.title.trim();
      const slug = slugOf(title);
      if (!slug)
        throw new ServiceError('svc_invalid_input', 'The title must contain a letter or digit (it makes the slug).', 400, {
          params: { title: 'makes an empty slug' },
        });
      if (cur.product_types.some((p) => p.slug === slug))
        throw new ServiceError('svc_duplicate_title', `A product type with slug "${slug}" exists already; choose another title.`, 409);
      if (cur.product_types.length >= MAX_LIST) throw new ServiceError('svc_limit', `At most ${MAX_LIST} product types.`, 409);
      const def = { slug, title, color: i.color ?? DEFAULT_COLOR, icon: i.icon ?? DEFAULT_ICON };
      tx.put<DashboardSettingsRecord>('settings', { ...cur, product_types: [...cur.product_types, def] });
      return def;
    });
  }

  /** Fields not given keep their value (upstream resets color and icon); a default type keeps its title. */
  async editProductType(slug: string, i: { title?: string; color?: string; icon?: string }): Promise<ProductTypeDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      const at = cur.product_types.findIndex((p) => p.slug === slug);
      if (at < 0) throw errors.productTypeNotFound(slug);
      const old = cur.product_types[at]!;
      const title = i.title?.trim();
      if (title !== undefined && title !== old.title && DEFAULT_SLUGS.has(slug)) {
        throw new ServiceError('svc_invalid_title', `Cannot change the title of the default product type "${slug}".`, 400);
      }
      const next = {
        ...old,
        ...(title !== undefined ? { title } : {}),
        ...(i.color ? { color: i.color } : {}),
        ...(i.icon ? { icon: i.icon } : {}),
      };
      const list = [...cur.product_types];
      list[at] = next;
      tx.put<DashboardSettingsRecord>('settings', { ...cur, product_types: list });
      return next;
    });
  }

  async deleteProductType(slug: string): Promise<ProductTypeDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      const old = cur.product_types.find((p) => p.slug === slug);
      if (!old) throw errors.productTypeNotFound(slug);
      if (DEFAULT_SLUGS.has(slug)) throw new ServiceError('svc_invalid_slug', `Cannot delete the default product type "${slug}".`, 400);
      const n = this.inUse(tx, 'product_type', slug);
      if (n) throw new ServiceError('svc_in_use', `${n} cost(s) have product type "${slug}"; change them first.`, 409, { costs: n });
      tx.put<DashboardSettingsRecord>('settings', { ...cur, product_types: cur.product_types.filter((p) => p.slug !== slug) });
      return old;
    });
  }

  // ---- cost tracker: payment methods ----

  async addPaymentMethod(title: string): Promise<PaymentMethodDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      const t = title.trim();
      const slug = slugOf(t);
      if (!slug)
        throw new ServiceError('svc_invalid_input', 'The title must contain a letter or digit (it makes the slug).', 400, {
          params: { title: 'makes an empty slug' },
        });
      if (cur.payment_methods.some((p) => p.slug === slug))
        throw new ServiceError('svc_duplicate_title', `A payment method with slug "${slug}" exists already; choose another title.`, 409);
      if (cur.payment_methods.length >= MAX_LIST) throw new ServiceError('svc_limit', `At most ${MAX_LIST} payment methods.`, 409);
      tx.put<DashboardSettingsRecord>('settings', { ...cur, payment_methods: [...cur.payment_methods, { slug, title: t }] });
      return { slug, title: t };
    });
  }

  async editPaymentMethod(slug: string, title: string): Promise<PaymentMethodDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      if (!cur.payment_methods.some((p) => p.slug === slug)) throw errors.paymentMethodNotFound(slug);
      const next = { slug, title: title.trim() };
      tx.put<DashboardSettingsRecord>('settings', {
        ...cur,
        payment_methods: cur.payment_methods.map((p) => (p.slug === slug ? next : p)),
      });
      return next;
    });
  }

  async deletePaymentMethod(slug: string): Promise<PaymentMethodDef> {
    return this.store.write((tx) => {
      const cur = this.cur(tx);
      const old = cur.payment_methods.find((p) => p.slug === slug);
      if (!old) throw errors.paymentMethodNotFound(slug);
      const n = this.inUse(tx, 'payment_method', slug);
      if (n) throw new ServiceError('svc_in_use', `${n} cost(s) use payment method "${slug}"; change them first.`, 409, { costs: n });
      tx.put<DashboardSettingsRecord>('settings', { ...cur, payment_methods: cur.payment_methods.filter((p) => p.slug !== slug) });
      return old;
    });
  }

  // ---- the sync schedule ----

  /** The latest slot at or before `now` (ms) of a schedule of `perDay` syncs from `time` (UTC). */
  static lastSlot(now: number, perDay: number, time: string): number {
    const [h, m] = time.split(':').map(Number) as [number, number];
    const step = 86_400_000 / perDay;
    const dayStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
    let slot = dayStart + (h * 60 + m) * 60_000;
    while (slot > now) slot -= step;
    while (slot + step <= now) slot += step;
    return slot;
  }

  /**
   * Claims the due slot (once across processes: the claim is a store write); true when this caller should sync. A
   * claim skips, rather than waits for, a settings record another process holds (claiming the slot, or an edit): the
   * slot stays due, and the next tick looks again.
   */
  async claimDueSync(now = Date.now()): Promise<boolean> {
    const s = this.get();
    if (!s.sync_frequency) return false;
    const slot = DashboardSettings.lastSlot(now, s.sync_frequency, s.sync_time);
    if (s.last_scheduled_sync && Date.parse(s.last_scheduled_sync) >= slot) return false;
    const claimed = await this.store.write(
      (tx) => {
        const cur = this.cur(tx);
        if (!cur.sync_frequency || (cur.last_scheduled_sync && Date.parse(cur.last_scheduled_sync) >= slot)) return false;
        tx.put<DashboardSettingsRecord>('settings', { ...cur, last_scheduled_sync: new Date(now).toISOString() });
        return true;
      },
      { skipLocked: true },
    );
    return claimed === true;
  }
}

/**
 * The sync schedule, run on every job runner tick: when a slot is due (claimed once across processes), a background
 * sync job of every connected site is queued, as sync-sites-v1 would queue one over the threshold. The audit log
 * records it as "system".
 */
export async function scheduledSync(
  dashboard: DashboardSettings,
  jobs: JobService,
  sites: SiteService,
  now = Date.now(),
  audit?: Pick<AuditService, 'system'>,
): Promise<string | null> {
  if (!(await dashboard.claimDueSync(now))) return null;
  const ids = [...sites.filter({}, () => [])].filter((s: SiteRecord) => !s.suspended && !s.disconnected).map((s) => s.id);
  if (!ids.length) return null;
  const { job_id } = await jobs.enqueue('sync', ids);
  await audit?.system('scheduled-sync', { job_id, sites: ids.length });
  return job_id;
}
