// Completions (completion/complete) for prompt arguments and resource-template variables: sites by id, domain or
// name; tags; clients; job ids; a site's plugin slugs; update types. Each kind answers only when the session's
// caller may run the tool that reads those things, and goes through the domain's lookups (prefix indexes for sites).
import type { Services } from '../domain/index.js';
import { UPDATE_TYPES, type ArgKind } from './prompts.js';

/** Values one completion answers at most (the MCP specification's limit). */
export const MAX_COMPLETIONS = 100;

/** The read tool a caller must be allowed to run to be offered values of each kind. */
export const COMPLETION_NEEDS: Partial<Record<ArgKind, string>> = {
  site: 'list-sites-v1',
  tag: 'list-tags-v1',
  client: 'list-clients-v1',
  job: 'get-batch-job-status-v1',
  plugin: 'get-site-plugins-v1',
};

export interface Completion {
  values: string[];
  total?: number;
  hasMore: boolean;
}

const NONE: Completion = { values: [], hasMore: false };

export async function completeValue(
  services: Services,
  kind: ArgKind,
  value: string,
  context: Record<string, string>,
  may: (tool: string) => boolean,
): Promise<Completion> {
  const needs = COMPLETION_NEEDS[kind];
  if (needs && !may(needs)) return NONE;
  const v = value.trim().toLowerCase();
  switch (kind) {
    case 'site': {
      const { sites, more } = services.sites.suggest(value, MAX_COMPLETIONS);
      const exact = /^\d+$/.test(v) ? Number(v) : null;
      const values = sites.map((s) =>
        s.id === exact ? String(s.id) : s.url.replace(/^[a-z][a-z0-9+.-]*:\/\/(www\.)?/i, '').replace(/\/+$/, ''),
      );
      return { values, hasMore: more };
    }
    case 'tag': {
      const tags = services.tags.list({ search: v }).filter((t) => t.name.toLowerCase().startsWith(v) || String(t.id) === v);
      return cut(tags.map((t) => t.name));
    }
    case 'client': {
      const clients = services.clients
        .list({ search: v })
        .filter((c) => c.name.toLowerCase().startsWith(v) || c.email.toLowerCase().startsWith(v) || String(c.id) === v);
      return cut(clients.map((c) => c.email || String(c.id)));
    }
    case 'job': {
      const ids = services.jobs.idsStartingWith(value.trim(), MAX_COMPLETIONS + 1);
      return { values: ids.slice(0, MAX_COMPLETIONS), hasMore: ids.length > MAX_COMPLETIONS };
    }
    case 'plugin': {
      const ref = context.site ?? context.id;
      const site = ref ? services.sites.find(ref) : undefined;
      if (!site) return NONE;
      return cut((await services.siteData.of(site)).plugins.map((p) => p.slug).filter((s) => s.toLowerCase().startsWith(v)));
    }
    case 'types': {
      // A comma-separated list: complete its last item, keeping what comes before.
      const parts = value.split(',');
      const last = parts.pop()!.trim().toLowerCase();
      const head = parts.map((p) => p.trim()).filter(Boolean);
      const left = UPDATE_TYPES.filter((t) => t.startsWith(last) && !head.includes(t));
      return cut(left.map((t) => [...head, t].join(',')));
    }
    default:
      return NONE;
  }
}

function cut(values: string[]): Completion {
  return values.length > MAX_COMPLETIONS
    ? { values: values.slice(0, MAX_COMPLETIONS), total: values.length, hasMore: true }
    : { values, total: values.length, hasMore: false };
}
