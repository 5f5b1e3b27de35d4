// Fuzzing every REST route (bodies, queries and path values), with fast-check.
// Wrong types, missing and extra fields, huge and empty strings, unicode, odd numbers, deep nesting. Properties: no 5xx,
// an error names the problem in {code, message, data:{status}}, and a rejected request changes nothing. The server and
// the random values are test/support/fuzz.ts's; the doors are three files so that the test workers share them out (one
// file was 81 s, the longest of the suite).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { restRoutes } from '../src/http/rest-routes.js';
import { RUNS, checkError, value, weird, useFuzzServer } from './support/fuzz.js';

const fuzz = useFuzzServer();
const generation = fuzz.generation;

describe('REST door', () => {
  const rows = restRoutes.filter((r) => r.ability?.name !== 'add-site-v1' && r.path !== '/sites/batch');
  it.each(rows.map((r) => [`${r.methods[0]} ${r.path}`, r] as const))(
    '%s never 5xx on random bodies, queries and path values',
    async (_n, r) => {
      await fc.assert(
        fc.asyncProperty(
          fc.dictionary(fc.string({ maxLength: 10 }), value, { maxKeys: 4 }),
          fc.dictionary(fc.string({ maxLength: 10 }), weird, { maxKeys: 3 }),
          fc.oneof(fc.constant('1'), fc.constant('999999'), fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/)),
          async (body, query, id) => {
            const path = r.path.replace(/:(\w+)/g, (_, n: string) => (n === 'job_id' ? `sync_${id}` : id));
            const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
            const method = r.methods[0]!;
            const before = generation();
            const res = await fuzz.s.rest(`${path}${qs ? `?${qs}` : ''}`, { method, ...(method === 'GET' ? {} : { json: body }) });
            checkError(res.status, res.body);
            if (res.status >= 400) expect(generation()).toBe(before);
          },
        ),
        { numRuns: RUNS },
      );
    },
  );
});
