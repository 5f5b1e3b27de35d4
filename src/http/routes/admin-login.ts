// REST v2 route for "Open WP Admin" (issue 29): POST /sites/{id}/admin-login answers a one-time login link (write).
import { getAdminLoginUrl } from '../../abilities/admin-login.js';
import { EDIT, route } from '../rest-door.js';
import { site } from './args.js';
import { ok } from './answers.js';

const adminLogin = route(EDIT, '/sites/:id_or_domain/admin-login', getAdminLoginUrl, {
  input: (a) => ({ site_id_or_domain: site(a) }),
  answers: ok({ data: getAdminLoginUrl.output }),
  output: (r) => ({ success: 1, data: r }),
});

export const adminLoginRoutes = [adminLogin];
