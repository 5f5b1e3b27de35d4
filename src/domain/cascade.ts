// What else must let go of a removed record, in the same write. Wired once in domain/index.ts, so removing a site,
// a tag or a client is one service call (`sites.remove(id)`) whoever makes it, and no service needs to know the
// services that point at its records.
import type { Tx } from '../store/store.js';

export class Cascade {
  private readonly steps: Array<(tx: Tx, id: number) => void> = [];

  /** Adds a step run, inside the removing write, before the record itself goes. */
  also(step: (tx: Tx, id: number) => void): void {
    this.steps.push(step);
  }

  run(tx: Tx, id: number): void {
    for (const step of this.steps) step(tx, id);
  }
}
