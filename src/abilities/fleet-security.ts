// Fleet-wide security: the sites whose last sync reported hardening issues, worst first (one site's issues and its
// live TLS check are get-site-security-v1).
import { z } from 'zod';
import { defineAbility } from './context.js';
import { Page, perPage } from '../core/paging.js';
import { SecurityFinding, Severity } from '../child/snapshot.js';
import { paged } from './schemas.js';

const Int = z.number().int();

export const getSecurityIssues = defineAbility({
  name: 'get-security-issues-v1',
  label: 'Sites with security issues',
  category: 'svc-sites',
  toolset: 'sites',
  description: 'Sites with security issues from their last sync, worst first, counts by severity; fleet vulnerability counts.',
  input: z.object({
    page: Page,
    per_page: perPage(20),
    min_severity: Severity.default('low').describe('Only sites with an issue this severe or worse.'),
  }),
  output: paged(
    z.object({
      site_id: z.number().int(),
      site_url: z.string(),
      site_name: z.string(),
      high: z.number().int(),
      medium: z.number().int(),
      low: z.number().int(),
      issues: z.array(SecurityFinding),
    }),
  ).extend({
    vulnerabilities: z
      .object({
        vulnerabilities: Int,
        sites: Int,
        installs: Int,
        by_severity: z.object({ critical: Int, high: Int, medium: Int, low: Int, none: Int, unscored: Int }),
      })
      .describe('Known vulnerabilities of installed versions (list-vulnerabilities-v1), counted by severity.'),
  }),
  annotations: { readonly: true, destructive: false, idempotent: true, openWorld: false },
  execute: async ({ page, per_page, min_severity }, ctx) => {
    const r = await ctx.fleetSecurity.page(min_severity, page, per_page);
    return { items: r.items, page, per_page, total: r.total, vulnerabilities: await ctx.vulnerabilities.severityCounts() };
  },
});

export const fleetSecurityAbilities = [getSecurityIssues];
