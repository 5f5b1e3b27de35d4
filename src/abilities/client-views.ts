// Client schemas and the client view, shared by the client, cost and site abilities.
import { z } from 'zod';
import type { Services } from '../domain/index.js';
import { CLIENT_TEXT_FIELDS } from '../domain/clients.js';
import { CLIENT_STATUSES, type ClientRecord } from '../store/records.js';

export const ClientStatus = z.enum(CLIENT_STATUSES);
export const ClientRef = z
  .union([z.number().int(), z.string()])
  .describe('Client ID (number or digits) or the client\'s e-mail address, e.g. 3 or "it@acme.example".');
export const ClientIds = z.array(z.number().int().min(1));

const line = z.string().max(200);

/** Everything add-client-v1 and update-client-v1 write besides the name (all optional). */
export const ClientFields = {
  email: z.email().max(200).nullable().optional().describe('Unique among clients; null clears it.'),
  status: ClientStatus.optional(),
  // Contact fields say what they are by their names.
  phone: line.optional(),
  address_1: line.optional(),
  address_2: line.optional(),
  city: line.optional(),
  state: line.optional(),
  zip: line.optional(),
  country: line.optional(),
  note: z.string().max(10_000).optional(),
  facebook: line.optional(),
  twitter: line.optional(),
  instagram: line.optional(),
  linkedin: line.optional(),
};
export const ClientName = z.string().min(1).max(200);

export const Client = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  status: ClientStatus,
  phone: z.string(),
  address_1: z.string(),
  address_2: z.string(),
  city: z.string(),
  state: z.string(),
  zip: z.string(),
  country: z.string(),
  note: z.string(),
  facebook: z.string(),
  twitter: z.string(),
  instagram: z.string(),
  linkedin: z.string(),
  sites_count: z.number().int().describe('Sites assigned to this client.'),
  created_at: z.string(),
  updated_at: z.string(),
});

export function clientView(svc: Pick<Services, 'clients'>, c: ClientRecord): z.infer<typeof Client> {
  const text = Object.fromEntries(CLIENT_TEXT_FIELDS.map((f) => [f, c[f] ?? ''])) as Record<(typeof CLIENT_TEXT_FIELDS)[number], string>;
  return {
    id: c.id,
    name: c.name,
    email: c.email,
    status: c.status,
    ...text,
    sites_count: svc.clients.siteIds(c.id).length,
    created_at: c.created_at,
    updated_at: c.updated_at ?? c.created_at,
  };
}
