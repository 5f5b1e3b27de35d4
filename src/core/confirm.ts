// The confirm / dry_run rule of destructive abilities: both true → 400 before anything is looked up;
// then the caller resolves the target (404); dry_run previews; otherwise confirm must be true.
import { ServiceError } from './errors.js';

export function refuseBothFlags(i: { confirm?: boolean; dry_run?: boolean }): void {
  if (i.confirm && i.dry_run) throw new ServiceError('svc_invalid_input', 'Cannot specify both dry_run and confirm.', 400);
}

export function requireConfirm(i: { confirm?: boolean }, message = 'Deletion requires confirm parameter to be true.'): void {
  if (i.confirm !== true) throw new ServiceError('svc_confirmation_required', message, 400);
}
