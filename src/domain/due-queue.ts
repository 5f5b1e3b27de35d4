// Ids by the time they fall due, earliest first (a binary heap on two parallel arrays): what lets the uptime scheduler
// start the checks that are due without a pass over every site. An id may be in it more than once, at old times: the
// caller keeps the true time elsewhere and skips an entry that no longer matches it (a lazy delete).
export class DueQueue {
  private times: number[] = [];
  private ids: number[] = [];

  get size(): number {
    return this.times.length;
  }

  /** The earliest entry, or null when empty. */
  peek(): { at: number; id: number } | null {
    return this.times.length ? { at: this.times[0]!, id: this.ids[0]! } : null;
  }

  push(at: number, id: number): void {
    const t = this.times;
    const d = this.ids;
    let i = t.length;
    t.push(at);
    d.push(id);
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (t[up]! <= at) break;
      t[i] = t[up]!;
      d[i] = d[up]!;
      i = up;
    }
    t[i] = at;
    d[i] = id;
  }

  /** Takes the earliest entry out (null when empty). */
  pop(): { at: number; id: number } | null {
    const t = this.times;
    if (!t.length) return null;
    const top = { at: t[0]!, id: this.ids[0]! };
    const at = t.pop()!;
    const id = this.ids.pop()!;
    if (t.length) this.siftDown(0, at, id);
    return top;
  }

  /**
   * Holds exactly these entries (time by id: a Map, IdNumbers), put in heap order from the bottom up: one pass, not a push each (the
   * scheduler's scan of 100,000 sites gives every site its time).
   */
  refill(due: { forEach(fn: (at: number, id: number) => void): void }): void {
    const t: number[] = (this.times = []);
    const d: number[] = (this.ids = []);
    due.forEach((at, id) => {
      t.push(at);
      d.push(id);
    });
    for (let i = (t.length >> 1) - 1; i >= 0; i--) this.siftDown(i, t[i]!, d[i]!);
  }

  /** Puts (at, id) at place i or below it, moving the earlier children up. */
  private siftDown(i: number, at: number, id: number): void {
    const t = this.times;
    const d = this.ids;
    const n = t.length;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && t[c + 1]! < t[c]!) c++;
      if (t[c]! >= at) break;
      t[i] = t[c]!;
      d[i] = d[c]!;
      i = c;
    }
    t[i] = at;
    d[i] = id;
  }
}
