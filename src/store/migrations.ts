// Data format versions. Each migration turns format N into N+1 in place; a start on an older data dir
// runs the missing ones in order (under the store lock) before loading.
export const CURRENT_FORMAT = 1;

const MIGRATIONS: Record<number, (dir: string) => Promise<void>> = {
  // 1: (dir) => { ... turn format 1 into 2 ... },
};

export async function migrate(dir: string, from: number): Promise<void> {
  for (let f = from; f < CURRENT_FORMAT; f++) {
    const step = MIGRATIONS[f];
    if (!step) throw new Error(`No migration from data format ${f} to ${f + 1}.`);
    await step(dir);
  }
}
