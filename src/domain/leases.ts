// Leases: named claims with an expiry, kept in the store, so that work shared by every sitefleet process on a data
// dir is done by one of them at a time (which monitor partitions a process checks). A claim is taken in a store
// transaction, which the file lock serialises across processes; a PostgreSQL engine would take the same with
// `SELECT … FOR UPDATE` on the lease row. A dead process stops renewing and its leases expire.
//
// Sharing: each live process also renews a member lease; a process holds at most its fair share of the
// partitions (ceil(partitions / live members)), releasing what is over it, so that a second process gets half.
import { randomUUID } from 'node:crypto';
import type { LeaseRecord } from '../store/monitor-records.js';
import type { Store, Tx } from '../store/store.js';

/** This process, as lease owner. */
export const PROCESS_OWNER = `${process.pid}-${randomUUID().slice(0, 8)}`;

export function findLease(tx: Pick<Tx, 'all'>, name: string): LeaseRecord | undefined {
  for (const l of tx.all<LeaseRecord>('leases')) if (l.name === name) return l;
  return undefined;
}

function putLease(tx: Tx, name: string, owner: string | null, until: number): LeaseRecord {
  const cur = findLease(tx, name);
  return cur ? tx.put<LeaseRecord>('leases', { ...cur, owner, until }) : tx.insert<LeaseRecord>('leases', { name, owner, until });
}

export interface PartitionPlan {
  /** Partitions this process holds after the round. */
  held: Set<number>;
  /** Partitions it gave up in the round (to flush their state before another process takes them). */
  released: number[];
  /** Partitions it took in the round. */
  taken: number[];
  members: number;
}

export class PartitionLeases {
  private held = new Set<number>();

  /**
   * @param prefix lease names are `${prefix}:${n}`; members are `${prefix}-member:${owner}`.
   * @param ttlMs a lease not renewed for this long is free; renew at least every ttlMs / 3.
   * @param now the clock leases are stamped and expire by (tests move it instead of sleeping).
   */
  constructor(
    private readonly store: Store,
    readonly prefix: string,
    readonly partitions: number,
    readonly ttlMs: number,
    readonly owner = PROCESS_OWNER,
    private readonly now: () => number = Date.now,
  ) {}

  holds(p: number): boolean {
    return this.held.has(p);
  }

  heldPartitions(): ReadonlySet<number> {
    return this.held;
  }

  /**
   * One round: renew our member lease and the partitions we keep, release those over our share, take free or
   * expired ones up to it. `beforeRelease` runs in the same transaction for each partition given up, so its
   * state is written before anyone else can hold it; a partition `canRelease` refuses is kept for this round.
   */
  async round(
    beforeRelease: (tx: Tx, partition: number) => void = () => {},
    canRelease: (partition: number) => boolean = () => true,
  ): Promise<PartitionPlan> {
    const plan = await this.store.write((tx) => {
      const now = this.now();
      const until = now + this.ttlMs;
      putLease(tx, `${this.prefix}-member:${this.owner}`, this.owner, until);
      let members = 0;
      for (const l of tx.all<LeaseRecord>('leases')) {
        if (!l.name.startsWith(`${this.prefix}-member:`)) continue;
        if (l.until > now) members++;
        else tx.delete('leases', l.id); // a dead member's record
      }
      const share = Math.ceil(this.partitions / Math.max(1, members));
      const held = new Set<number>();
      const released: number[] = [];
      const taken: number[] = [];
      const free: number[] = [];
      for (let p = 0; p < this.partitions; p++) {
        const l = findLease(tx, `${this.prefix}:${p}`);
        if (l?.owner === this.owner && l.until > now) held.add(p);
        else if (!l || !l.owner || l.until <= now) free.push(p);
      }
      // Give back the highest-numbered partitions over our share, keep the rest.
      for (const p of [...held].sort((a, b) => b - a)) {
        if (held.size <= share) break;
        if (!canRelease(p)) continue; // work in hand (a check running): give it back next round
        beforeRelease(tx, p);
        putLease(tx, `${this.prefix}:${p}`, null, 0);
        held.delete(p);
        released.push(p);
      }
      for (const p of held) putLease(tx, `${this.prefix}:${p}`, this.owner, until);
      for (const p of free) {
        if (held.size >= share) break;
        putLease(tx, `${this.prefix}:${p}`, this.owner, until);
        held.add(p);
        if (!this.held.has(p)) taken.push(p);
      }
      return { held, released, taken, members };
    });
    // Ones we thought we held but lost (expired while we stalled, then taken) are dropped too.
    this.held = plan.held;
    return plan;
  }

  /** Give every partition back (clean shutdown), writing their state first. */
  async releaseAll(beforeRelease: (tx: Tx, partition: number) => void = () => {}): Promise<void> {
    await this.store.write((tx) => {
      for (const p of this.held) {
        const l = findLease(tx, `${this.prefix}:${p}`);
        if (l?.owner !== this.owner) continue;
        beforeRelease(tx, p);
        putLease(tx, `${this.prefix}:${p}`, null, 0);
      }
      const m = findLease(tx, `${this.prefix}-member:${this.owner}`);
      if (m) tx.delete('leases', m.id);
    });
    this.held = new Set();
  }
}

/**
 * The other processes running on a fleet now, by their leases: each running `serve` renews a member lease every few
 * seconds (monitors), so one not yet expired is a process that may write at any moment. Commands that copy or replace a
 * fleet wholesale (migrate --from, restore) refuse while there is one. The pid is the owner's prefix.
 */
export function liveHolders(
  leases: Iterable<LeaseRecord>,
  now = Date.now(),
  self = PROCESS_OWNER,
): Array<{ owner: string; pid: number; until: number }> {
  const seen = new Map<string, { owner: string; pid: number; until: number }>();
  for (const l of leases) {
    if (!l.name.includes('-member:') || !l.owner || l.owner === self || l.until <= now) continue;
    seen.set(l.owner, { owner: l.owner, pid: Number(l.owner.split('-')[0]), until: l.until });
  }
  return [...seen.values()];
}
