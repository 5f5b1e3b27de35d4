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
  q.refill(new Map());
  expect(q.size).toBe(0);
});

it('refills from every due time at once, in heap order: pops them earliest first, equal times and all', () => {
  const q = new DueQueue();
  q.push(0, 999); // replaced by the refill
  let x = 11;
  const rand = () => (x = (x * 1103515245 + 12345) % 2 ** 31);
  for (const n of [0, 1, 2, 3, 10, 1001]) {
    const due = new Map<number, number>();
    for (let id = 1; id <= n; id++) due.set(id, rand() % 97);
    q.refill(due);
    expect(q.size).toBe(n);
    q.push(50, 5000); // still a heap for what comes after
    const out: Array<[number, number]> = [];
    for (let e = q.pop(); e; e = q.pop()) out.push([e.at, e.id]);
    const want = [...due].map(([id, at]) => [at, id] as [number, number]).concat([[50, 5000]]);
    expect(out.map(([t]) => t)).toEqual(want.map(([t]) => t).sort((a, b) => a - b));
    expect(out.map(([t, d]) => `${t}:${d}`).sort()).toEqual(want.map(([t, d]) => `${t}:${d}`).sort());
  }
});
