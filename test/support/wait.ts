// Test support: waiting for something that happens in the background (a job, a monitor, another process).

/** Polls `fn` every 50 ms until `ok` holds for its value, which it answers; fails after `ms` naming the last value. */
export async function until<T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
