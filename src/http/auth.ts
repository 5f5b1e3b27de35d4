// Credentials on HTTP: which schemes each door takes, and the 401 every route answers without them.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ServiceError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { Services } from '../services/index.js';
import { sendError } from './respond.js';

export type Scheme = 'bearer' | 'basic';

declare module 'express-serve-static-core' {
  interface Request { principal?: Principal }
}

export function readPrincipal(services: Services, header: string | undefined, schemes: readonly Scheme[], missing: ServiceError): Principal {
  if (!header) throw missing;
  const space = header.indexOf(' ');
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  const value = space === -1 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && schemes.includes('bearer')) {
    services.store.refreshIfStale();
    return services.auth.verifyBearer(value);
  }
  if (scheme === 'basic' && schemes.includes('basic')) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new ServiceError('invalid_username', 'Malformed HTTP Basic credentials.', 401);
    services.store.refreshIfStale();
    return services.auth.verifyBasic(decoded.slice(0, colon), decoded.slice(colon + 1));
  }
  throw missing;
}

/** Middleware: sets req.principal or answers 401. Runs before body parsing and routing. */
export function requireAuth(services: Services, schemes: readonly Scheme[], missing: () => ServiceError): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    try {
      req.principal = readPrincipal(services, req.headers.authorization, schemes, missing());
      next();
    } catch (e) {
      if (schemes.includes('bearer') && !schemes.includes('basic')) res.setHeader('WWW-Authenticate', 'Bearer');
      sendError(res, e);
    }
  };
}
