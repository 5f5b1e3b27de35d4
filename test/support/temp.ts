// Temp dirs for tests. Each one made here is removed after the test file that made it (test/support/temp-cleanup.ts,
// a setup file of every vitest config), after the file's own afterAll hooks: a test that forgets its dir, or fails
// before removing it, leaves nothing under the system's temp dir.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

export function tempDir(prefix = 'sitefleet-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every dir tempDir made since the last call. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}
