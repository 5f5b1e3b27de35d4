// "Open WP Admin" (issue 29): a one-time, short-lived link that logs a browser into a site's wp-admin as its
// administrator through the child's own signed login. Write callers only (the registry checks the method); in the
// toolset `admin-login`, which MCP offers only when asked for by name (a login link handed to a model is a secret).
import { z } from 'zod';
import { defineAbility } from './context.js';
import { SiteRef } from './schemas.js';
import { LINK_TTL_MS } from '../domain/admin-logins.js';

export const getAdminLoginUrl = defineAbility({
  name: 'get-admin-login-url-v1',
  label: 'Get a WP Admin login link',
  category: 'svc-sites',
  toolset: 'admin-login',
  description:
    "A one-time link that logs a browser into the site's wp-admin as its administrator (the child's signed login). " +
    `It works once, for ${LINK_TTL_MS / 1000} s; treat it as a secret. Errors: svc_site_not_found (404), ` +
    'svc_site_suspended / svc_site_disconnected / svc_site_keys_missing (409), svc_admin_login_not_served (400), ' +
    'svc_too_many_admin_logins (429).',
  input: z.object({ site_id_or_domain: SiteRef }),
  output: z.object({
    site_id: z.number().int(),
    site_url: z.string(),
    url: z.string().describe("Open it in a browser: it redirects to the child's signed login, then to wp-admin."),
    expires_at: z.string(),
    expires_in_s: z.number().int(),
  }),
  // Not read-only: it hands out a login to the site, so only callers who may change the site get one.
  annotations: { readonly: false, destructive: false, idempotent: false, openWorld: false, siteAction: true },
  execute: async (i, ctx) => {
    const site = ctx.sites.resolve(i.site_id_or_domain);
    return { site_id: site.id, site_url: site.url, ...(await ctx.adminLogins.issue(site, ctx.principal)) };
  },
});

export const adminLoginAbilities = [getAdminLoginUrl];
