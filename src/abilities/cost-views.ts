// Cost schemas and views, shared by the cost, client and site abilities: the full cost record, and the
// short ability view (id, name, amount, frequency, next_due) of a site's costs.
import { z } from 'zod';
import type { Services } from '../domain/index.js';
import { cents, frequencyOf, isoDay, nextRenewal, type SiteCost } from '../domain/costs.js';
import { COST_STATUSES, LICENSE_TYPES, PAYMENT_TYPES, PRODUCT_TYPES, RENEWAL_TYPES, type CostRecord } from '../store/records.js';
import { HexColor, SiteRefs, TagIds } from './schemas.js';
import { ClientIds } from './client-views.js';

export const CostId = z.number().int().min(1);
export const PaymentType = z.enum(PAYMENT_TYPES).describe('lifetime: paid once.');
/** A product type slug: plugin, theme, hosting, service, other, or one added in the cost-tracker settings. */
export const ProductType = z
  .string()
  .regex(/^[a-z0-9_-]{1,100}$/)
  .describe(`${PRODUCT_TYPES.join(', ')} or one added in settings.`);
export const LicenseType = z.enum(LICENSE_TYPES).describe('single_site: the price is per site; multi_site: shared.');
export const RenewalType = z.enum(RENEWAL_TYPES).describe('How often a subscription renews.');
export const CostStatus = z.enum(COST_STATUSES).describe('Only active costs count in totals.');
export const IsoDate = z
  .string()
  .refine((v) => isoDay(v) !== null, { message: 'must be an ISO 8601 date such as 2026-03-31 or 2026-03-31T12:00:00Z' })
  .describe('ISO 8601 date or date-time; kept as its UTC day.');
export const Price = z.number().min(0).max(1_000_000_000).describe('Per renewal, or once for lifetime.');

/** The write fields of a cost, all optional (add-cost-v1 makes some required). */
export const CostFields = {
  name: z.string().min(1).max(200),
  price: Price,
  payment_type: PaymentType,
  product_type: ProductType,
  product_slug: z.string().max(200).describe('For plugin and theme costs.'),
  license_type: LicenseType,
  renewal_type: RenewalType.nullable().describe('Required for a subscription.'),
  last_renewal: IsoDate.nullable().describe('ISO 8601 day.'),
  payment_method: z.string().max(100).describe('e.g. paypal, stripe, credit_debit, cash.'),
  cost_tracker_status: CostStatus,
  url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .nullable()
    .describe('Product or vendor page.'),
  note: z.string().max(10_000),
  product_color: HexColor.nullable(),
  icon_hidden: z.boolean(),
  sites: SiteRefs.describe('Site IDs or domains.'),
  groups: TagIds.describe('Tag IDs.'),
  clients: ClientIds.describe('Client IDs.'),
};

export const Cost = z.object({
  id: z.number().int(),
  name: z.string(),
  price: z.number(),
  payment_type: PaymentType,
  product_type: ProductType,
  product_slug: z.string(),
  license_type: LicenseType,
  renewal_type: RenewalType.nullable(),
  last_renewal: z.string().nullable(),
  next_renewal: z.string().nullable().describe('YYYY-MM-DD, today or later; null for lifetime costs or without last_renewal.'),
  payment_method: z.string(),
  cost_tracker_status: CostStatus,
  url: z.string(),
  note: z.string(),
  product_color: z.string().nullable(),
  icon_hidden: z.boolean(),
  sites: z.array(z.number().int()),
  groups: z.array(z.number().int()),
  clients: z.array(z.number().int()),
  sites_count: z.number().int().describe('Sites covered: named, carrying a named tag, or owned by a named client.'),
  orphaned: z.boolean().describe('True when every target was deleted: the cost applies to nothing until it gets new targets.'),
  warnings: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});

export const SiteCostItem = z.object({
  id: z.number().int(),
  name: z.string(),
  amount: z.number().describe("The cost's price."),
  frequency: z.string().describe('weekly, monthly, quarterly, yearly or lifetime.'),
  next_due: z.string().nullable().describe('Next renewal, YYYY-MM-DD; null when none.'),
  status: CostStatus,
  license_type: LicenseType,
  site_share: z.number().describe("This site's part of the amount (amount / sites covered for multi_site)."),
  monthly_equivalent: z.number().describe('What this cost adds to total_monthly (0 unless active and recurring).'),
});

/** A site's cost with its full record too (get-site-costs-v1 with full; REST lists these): the record's fields, then the site's. */
export const FullSiteCostItem = z.object({ ...Cost.shape, ...SiteCostItem.shape });

const ORPHANED =
  'This cost applies to no site, tag or client any more (its targets were deleted). Give it new targets with update-cost-v1, or delete it.';

export function costView(svc: Pick<Services, 'costs'>, c: CostRecord): z.infer<typeof Cost> {
  const t = svc.costs.targets(c);
  const orphaned = !t.sites.length && !t.groups.length && !t.clients.length;
  return {
    id: c.id,
    name: c.name,
    price: c.price,
    payment_type: c.payment_type,
    product_type: c.product_type,
    product_slug: c.product_slug,
    license_type: c.license_type,
    renewal_type: c.renewal_type,
    last_renewal: c.last_renewal,
    next_renewal: nextRenewal(c, svc.costs.today()),
    payment_method: c.payment_method,
    cost_tracker_status: c.cost_tracker_status,
    url: c.url,
    note: c.note,
    product_color: c.product_color,
    icon_hidden: c.icon_hidden,
    ...t,
    sites_count: svc.costs.coveredSites(c).length,
    orphaned,
    warnings: orphaned ? [ORPHANED] : [],
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

export function siteCostView(svc: Pick<Services, 'costs'>, { cost, share, monthly }: SiteCost): z.infer<typeof SiteCostItem> {
  return {
    id: cost.id,
    name: cost.name,
    amount: cost.price,
    frequency: frequencyOf(cost),
    next_due: nextRenewal(cost, svc.costs.today()),
    status: cost.cost_tracker_status,
    license_type: cost.license_type,
    site_share: cents(share),
    monthly_equivalent: cents(monthly),
  };
}
