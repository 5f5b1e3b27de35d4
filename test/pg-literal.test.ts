// The literal a PostgreSQL commit sends its rows in (sqlLiteral, store/pg-store.ts) is, character for character, the one
// pg's own escapeLiteral makes: quotes, backslashes, both, neither, any text. (Every commit of the pg lane sends one to
// a real server and reads the rows back.)
import fc from 'fast-check';
import pg from 'pg';
import { expect, it } from 'vitest';
import { sqlLiteral } from '../src/store/pg-store.js';

it("makes exactly pg's escapeLiteral for any text, and for JSON holding quotes and backslashes", () => {
  for (const t of ['', "'", '\\', "\\'", "it's", 'a\\b', "''\\\\''", '{"a":"x\\"y"}', 'é ☃ 𝄞', " E'x'"])
    expect(sqlLiteral(t)).toBe(pg.escapeLiteral(t));
  const piece = fc.oneof(fc.string({ unit: 'grapheme' }), fc.constantFrom("'", '\\', "\\'", '"', ' E', '\u0000'));
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
      const t = parts.join('');
      expect(sqlLiteral(t)).toBe(pg.escapeLiteral(t));
      const json = JSON.stringify({ t, n: [t] });
      expect(sqlLiteral(json)).toBe(pg.escapeLiteral(json));
    }),
    { numRuns: 500 },
  );
});
