// The uptime scheduler's due queue: earliest first, whatever the order of pushes, repeated ids and times included.
import { expect, it } from 'vitest';
import { DueQueue } from '../src/domain/due-queue.js';

it('pops entries earliest first, keeps repeated ids and equal times, and empties', () => {
  const q = new DueQueue();
  expect(q.pop()).toBeNull();
  expect(q.peek()).toBeNull();
  let x = 7;
  const rand = () => (x = (x * 1103515245 + 12345) % 2 ** 31);
  const pushed: Array<[number, number]> = [];
  for (let i = 0; i < 2000; i++) {
    const at = rand() % 500; // many equal times
    const id = rand() % 300; // ids repeated
    q.push(at, id);
    pushed.push([at, id]);
    if (i % 7 === 0) {
      // Interleaved pops take the earliest so far.
      const min = Math.min(...pushed.map(([t]) => t));
      const e = q.pop()!;
      expect(e.at).toBe(min);
      pushed.splice(
        pushed.findIndex(([t, d]) => t === e.at && d === e.id),
        1,
      );
    }
  }
  expect(q.size).toBe(pushed.length);
  expect(q.peek()!.at).toBe(Math.min(...pushed.map(([t]) => t)));
  const out: Array<[number, number]> = [];
  for (let e = q.pop(); e; e = q.pop()) out.push([e.at, e.id]);
  expect(out.map(([t]) => t)).toEqual(pushed.map(([t]) => t).sort((a, b) => a - b));
  expect(out.map(([t, d]) => `${t}:${d}`).sort()).toEqual(pushed.map(([t, d]) => `${t}:${d}`).sort());
  q.push(1, 1);
  q.clear();
  expect(q.size).toBe(0);
});
