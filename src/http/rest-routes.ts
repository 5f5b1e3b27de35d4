// The REST v2 route table: one row per route of the spec, each naming the ability it runs. The spec's
// envelopes ({success:1, total, data}, action messages, batch results) are made in the family files.
import type { RestRoute } from './rest-door.js';
import { batchRoutes } from './routes/batch.js';
import { siteRoutes } from './routes/sites.js';
import { tagRoutes } from './routes/tags.js';
import { pluginRoutes } from './routes/plugins.js';
import { clientRoutes } from './routes/clients.js';
import { costRoutes } from './routes/costs.js';
import { userRoutes } from './routes/users.js';
import { postRoutes } from './routes/posts.js';
import { pageRoutes } from './routes/pages.js';
import { clientFieldRoutes } from './routes/client-fields.js';
import { settingsRoutes } from './routes/settings.js';
import { updateRoutes } from './routes/updates.js';
import { monitorRoutes } from './routes/monitors.js';
import { vulnerabilityRoutes } from './routes/vulnerabilities.js';
import { keyRoutes } from './routes/keys.js';
import { healthRoutes } from './routes/health.js';
import { packageRoutes } from './routes/packages.js';
import { notificationRoutes } from './routes/notifications.js';
import { settingsMonitoringRoutes } from './routes/settings-monitoring.js';
import { settingsEmailsRoutes } from './routes/settings-emails.js';
import { updatePolicyRoutes } from './routes/update-policies.js';
import { adminLoginRoutes } from './routes/admin-login.js';
import { reportRoutes } from './routes/reports.js';

export const restRoutes: readonly RestRoute[] = [
  ...batchRoutes, // /sites/batch before /sites/:id_or_domain
  ...siteRoutes,
  ...pluginRoutes,
  ...tagRoutes,
  ...clientFieldRoutes, // /clients/fields before /clients/:id_or_email
  ...clientRoutes,
  ...costRoutes,
  ...userRoutes,
  ...postRoutes,
  ...pageRoutes,
  ...settingsRoutes,
  ...updatePolicyRoutes, // /updates/policies before /updates/:id_or_domain
  ...settingsMonitoringRoutes,
  ...settingsEmailsRoutes,
  ...healthRoutes, // /updates/history before /updates/:id_or_domain
  ...updateRoutes,
  ...monitorRoutes,
  ...vulnerabilityRoutes,
  ...keyRoutes,
  ...packageRoutes,
  ...notificationRoutes,
  ...adminLoginRoutes,
  ...reportRoutes,
];
