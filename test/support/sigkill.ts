// Test support: a writer process killed with SIGKILL mid-stream, for "every acknowledged write survives" on any engine.
import { spawn } from 'node:child_process';

/**
 * Runs a process that opens a store with `openStore` (an ES module expression whose value is the store, e.g.
 * `(await import(".../store.js")).Store.open("/tmp/x")`), then inserts tags `w1`, `w2`, … five at a time, printing each
 * only once the store acknowledged it; kills it with SIGKILL after `acks` acknowledgements. Answers the acknowledged names.
 */
export async function acknowledgedBeforeKill(openStore: string, acks: number): Promise<string[]> {
  const code = `
    const s = await ${openStore};
    let i = 0;
    for (;;) {
      const batch = Array.from({ length: 5 }, () => ++i);
      await Promise.all(batch.map((n) => s.write((tx) => tx.insert('tags', { name: 'w' + n })).then(() => process.stdout.write('ack ' + n + '\\n'))));
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      if ((out.match(/^ack /gm) ?? []).length >= acks) {
        child.kill('SIGKILL');
        resolve();
      }
    });
  });
  await new Promise((r) => child.once('exit', r));
  return [...out.matchAll(/^ack (\d+)$/gm)].map((m) => `w${m[1]}`);
}
