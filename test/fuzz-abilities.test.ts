// Fuzzing every ability through the abilities door, malformed JSON and content types included, with fast-check.
// Wrong types, missing and extra fields, huge and empty strings, unicode, odd numbers, deep nesting. Properties: no 5xx,
// an error names the problem in {code, message, data:{status}}, and a rejected request changes nothing. The server and
// the random values are test/support/fuzz.ts's; the doors are three files so that the test workers share them out (one
// file was 81 s, the longest of the suite).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allowedMethods } from '../src/core/ability.js';
import { bracketQuery } from './support/server.js';
import { FUZZED, RUNS, checkError, inputFor, useFuzzServer } from './support/fuzz.js';

const fuzz = useFuzzServer();
const generation = fuzz.generation;

describe('abilities door', () => {
  it.each(FUZZED.map((a) => [a.name]))('%s: JSON bodies and bracketed queries never 5xx; a rejection changes nothing', async (name) => {
    const a = FUZZED.find((x) => x.name === name)!;
    await fc.assert(
      fc.asyncProperty(inputFor(name), fc.constantFrom(...allowedMethods(a)), async (input, method) => {
        const before = generation();
        const r =
          method === 'POST'
            ? await fuzz.s.ability(name, input, { method })
            : await fuzz.s.ability(name, undefined, { method, query: bracketQuery(input) });
        checkError(r.status, r.body);
        if (r.status >= 400) expect(generation()).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers malformed JSON, wrong content types and odd brackets with 4xx envelopes', async () => {
    const url = `${fuzz.s.abilitiesBase}/abilities/svc/add-tag-v1/run`;
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 200 }),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', ''),
        async (body, type) => {
          const before = generation();
          const res = await fetch(url, {
            method: 'POST',
            headers: { authorization: fuzz.s.creds.admin, ...(type ? { 'content-type': type } : {}) },
            body,
          });
          const text = await res.text();
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            /* checked below */
          }
          checkError(res.status, parsed);
          if (res.status >= 400) expect(generation()).toBe(before);
        },
      ),
      { numRuns: RUNS * 2 },
    );
    for (const q of [
      'input[[=1',
      'input]=1',
      'input[a][b][c][d][e][f][g]=1',
      'input[]=1&input[]=2',
      'input=%7B',
      'input[page]=1&input[page]=2',
    ]) {
      const res = await fetch(`${fuzz.s.abilitiesBase}/abilities/svc/list-sites-v1/run?${q}`, {
        headers: { authorization: fuzz.s.creds.admin },
      });
      checkError(res.status, await res.json());
    }
  });
});
