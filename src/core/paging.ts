// Pagination: 1-based page, per_page 1..100, lists past the end are empty (never an error).
import { z } from 'zod';

export const Page = z.number().int().min(1).default(1).describe('Page number, 1-based.');
export const perPage = (def: number) => z.number().int().min(1).max(100).default(def).describe(`Items per page (1-100, default ${def}).`);

export function paginate<T>(items: readonly T[], page: number, per_page: number): T[] {
  const start = (page - 1) * per_page;
  return start >= items.length ? [] : items.slice(start, start + per_page);
}
