// What the fuzz files share (test/fuzz-*.test.ts: every ability through every door with fast-check): the server they
// run against, the random values and the check of an error answer. FUZZ_RUNS raises the number of cases (npm run fuzz).
import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { allAbilities } from '../../src/abilities/index.js';
import { seedSites, startServer, type TestServer } from './server.js';
import { fleetGeneration } from './generation.js';

export const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
// add-site would resolve and dial whatever host a random string names: fuzzing stays on loopback.
export const FUZZED = allAbilities.filter((a) => a.name !== 'add-site-v1');

/** A server whose sites, package source and job runner cannot make a random call reach anything or act later. */
async function startFuzzServer(): Promise<TestServer> {
  // The package source (directory search, installs) is unreachable loopback too: fuzzing never dials the real directory.
  const s = await startServer({ config: { loginFailureLimit: '100000', packageSource: 'http://127.0.0.1:9/' } as never });
  // Sites that are not reachable: remote abilities fail per site instead of dialling out.
  await seedSites(s.services, 3, (i) => ({ url: `http://127.0.0.1:9/fuzz${i}/` }));
  // No job runner: a random call may lower the queue threshold (update-dashboard-settings), and from then on an
  // accepted batch is a queued job whose writes would land during a later call, making a refused call look as if
  // it changed something (CI saw it under load). What is checked here is each call's own effect.
  await s.services.jobs.stop();
  return s;
}

/**
 * The fuzz server of a test file: started before its tests, closed after them. `s` is the server; `generation()` a number
 * that moves with any write to its fleet (a refused call must leave it).
 */
export function useFuzzServer(): { readonly s: TestServer; generation(): number } {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startFuzzServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get s() {
      return server!;
    },
    generation: () => fleetGeneration(server!.services.store),
  };
}

export const weird = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.constant(''),
  // Just past every bound on a string's length below the posts' 1,000,000 (a report logo's 65,536, the 10,000 of
  // notes): 100,000 crossed no more of them and made the fuzz files a quarter slower (JSON in and out of each request).
  fc.constant('x'.repeat(65_537)),
  fc.integer(),
  fc.double(),
  fc.constantFrom(-1, 0, 2 ** 53, -(2 ** 60), Number.MAX_SAFE_INTEGER, 1e308),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('true', 'false', '0', '1', '1.5', '[]', '{}', '"', '\u0000', '../..', '%00'),
);
export const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    weird,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('v'), { maxKeys: 4 }),
  ),
})).v;

/** Inputs shaped like the ability's own fields half of the time, anything the other half. */
export function inputFor(name: string): fc.Arbitrary<unknown> {
  const a = FUZZED.find((x) => x.name === name)!;
  const keys = Object.keys(a.input.shape);
  return fc.oneof(value, fc.dictionary(fc.constantFrom(...keys, 'extra', '__proto__', 'constructor'), value, { maxKeys: 5 }));
}

export function checkError(status: number, body: unknown): void {
  // The fuzzed sites and package source cannot be reached on purpose: a single-site call to one (reconnect), or a
  // directory search, is a 502/504 that names the failure. Nothing else may be 5xx. (Which calls get that far depends on what earlier random calls did to the
  // sites, e.g. whether one is suspended, so this was hit by chance.)
  const code = (body as { code?: unknown } | null)?.code;
  const childFailure =
    (status === 502 || status === 504) &&
    typeof code === 'string' &&
    /^svc_(child_|reconnect_failed$|package_source_unavailable$)/.test(code);
  // Upstream routes sitefleet does not support answer 501 svc_not_supported, saying why (issue 21).
  const notSupported = status === 501 && code === 'svc_not_supported';
  if (!childFailure && !notSupported) expect(status).toBeLessThan(500);
  if (status >= 400) {
    expect(body).toMatchObject({ code: expect.any(String), message: expect.any(String), data: { status } });
  }
}
