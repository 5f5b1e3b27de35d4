// Command-line arguments for every sitefleet command: Node's parseArgs, with its raw messages turned into ones a person
// can act on (the flag they probably meant, the value a flag is missing) and stray words refused rather than ignored.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake on the command line: printed alone (no stack) and the process exits with status 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between two short strings. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The flag closest to a mistyped one, when it is close enough to be a typo (or the mistyped one is its prefix). */
export function closestFlag(given: string, flags: string[]): string | undefined {
  const bare = given.replace(/^-+/, '').split('=')[0]!.toLowerCase();
  let best: { flag: string; d: number } | undefined;
  for (const flag of flags) {
    const d = flag.startsWith(bare) && bare.length >= 2 ? 0.5 : distance(bare, flag);
    if (!best || d < best.d) best = { flag, d };
  }
  return best && best.d <= Math.max(1, Math.floor(bare.length / 3)) ? best.flag : undefined;
}

export interface ParseRules {
  /** The most positional words the command takes (e.g. `keys revoke ID` takes 2); more are refused. */
  positionals: number;
}

/**
 * Parses `args` strictly. Refuses, with a clear message: an unknown flag (naming the closest real one), a flag without
 * its value, a value given to a switch, and positional words beyond `rules.positionals` (`npm start --port 9000` hands
 * the script a bare "9000": npm keeps `--port` for itself).
 */
export function parseCommand<T extends Options>(command: string, args: string[], options: T, rules: ParseRules) {
  const flags = Object.keys(options);
  const tail = ` "sitefleet ${command} --help" lists the options.`;
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    const err = e as Error & { code?: string };
    const given = /'(-[^']*)'/.exec(err.message)?.[1] ?? '';
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const near = closestFlag(given, flags);
      throw new UsageError(`sitefleet ${command}: unknown option ${given}.${near ? ` Did you mean --${near}?` : ''}${tail}`);
    }
    if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const flag = /'(--?[\w-]+)/.exec(err.message)?.[1] ?? given;
      throw new UsageError(
        /does not take an argument/.test(err.message)
          ? `sitefleet ${command}: ${flag} is a switch and takes no value (write ${flag} alone to turn it on).${tail}`
          : `sitefleet ${command}: ${flag} needs a value (${flag} VALUE).${tail}`,
      );
    }
    throw new UsageError(`sitefleet ${command}: ${err.message}${tail}`);
  }
  const extra = parsed.positionals.slice(rules.positionals);
  if (extra.length) {
    throw new UsageError(
      `sitefleet ${command}: unexpected argument "${extra[0]}". Options start with --; through npm, put them after --` +
        ` (npm start -- --port 9000).${tail}`,
    );
  }
  return parsed;
}
