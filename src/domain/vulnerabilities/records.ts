// The feeds' records, normalised into one shape (reference vulnerability-feeds.md §9): the Wordfence Intelligence
// record (validated one record at a time: a bad record is skipped and counted, never the whole feed) and the
// WPVulnerability per-slug answer. Also the streaming reader of a Wordfence feed: one JSON object keyed by record id,
// decoded record by record so that memory stays bounded whatever the feed's size.
import { createHash } from 'node:crypto';
import { ServiceError } from '../../core/errors.js';
import { cleanVersion } from './version.js';

export type FeedSource = 'wordfence' | 'wpvulnerability';
export type SoftwareType = 'core' | 'plugin' | 'theme';
export type Severity = 'none' | 'low' | 'medium' | 'high' | 'critical';

export interface VersionRange {
  /** null = no bound ("*"). */
  from: string | null;
  from_inclusive: boolean;
  to: string | null;
  to_inclusive: boolean;
}

export interface AffectedSoftware {
  type: SoftwareType;
  slug: string;
  name: string;
  ranges: VersionRange[];
  /** The feed says a fix exists (Wordfence `patched`; WPVulnerability `unfixed: "0"`). */
  patched: boolean;
  patched_versions: string[];
  remediation: string | null;
}

export interface VulnRecord {
  /** `${source}:${source_id}`: unique in the store. */
  key: string;
  source: FeedSource;
  source_id: string;
  title: string;
  description: string;
  informational: boolean;
  cve: string | null;
  cve_link: string | null;
  /** Other ids of the same fact (CVE ids, the other feed's id). */
  aliases: string[];
  software: AffectedSoftware[];
  cvss: { vector: string | null; score: number; rating: string } | null;
  severity: Severity | null;
  cwe: Array<{ id: string; name: string }>;
  references: string[];
  published: string | null;
  updated: string | null;
  /** The feed's licence block (Wordfence `copyrights`), verbatim: it must travel with the record wherever it is shown. */
  copyrights: Record<string, unknown>;
}

/** A record's text fields are clipped: a feed cannot make one record arbitrarily heavy in the store. */
export const MAX_TEXT = 4000;
export const MAX_LIST_ITEMS = 100;
/** A record bigger than this (raw JSON bytes) refuses the feed: the parser never holds more than one such record. */
export const MAX_RECORD_BYTES = 1024 * 1024;

const clip = (s: string, n = MAX_TEXT) => (s.length > n ? s.slice(0, n) : s);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const strList = (v: unknown): string[] | null =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]).slice(0, MAX_LIST_ITEMS).map((x) => clip(x, 2000)) : null;

/** Severity from a CVSS score (0 none, < 4 low, < 7 medium, < 9 high, else critical). */
export function severityOf(score: number): Severity {
  if (score <= 0) return 'none';
  if (score < 4) return 'low';
  if (score < 7) return 'medium';
  if (score < 9) return 'high';
  return 'critical';
}
export const SEVERITY_RANK: Record<Severity, number> = { none: 0, low: 1, medium: 2, high: 3, critical: 4 };

const TYPES = new Set<SoftwareType>(['core', 'plugin', 'theme']);
/** "*" only as the whole string means no bound; `1.*` is a literal. */
const bound = (v: string) => (v.trim() === '*' ? null : cleanVersion(v));
/** Dates: "YYYY-MM-DD hh:mm:ss" UTC (ISO 8601 tolerated) → ISO; anything else → null. */
function isoDate(v: unknown): string | null {
  if (typeof v !== 'string' || !v) return null;
  const t = Date.parse(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(v) ? `${v.replace(' ', 'T')}Z` : v);
  return Number.isFinite(t) ? new Date(t).toISOString().replace(/\.000Z$/, 'Z') : null;
}

/**
 * One Wordfence record (production or scanner shape) → our record, or a reason it is refused. Required: id, title,
 * software[] with type/slug/affected_versions/patched/patched_versions, references; the production fields are
 * optional and typed when present.
 */
export function normaliseWordfence(raw: unknown): VulnRecord | string {
  if (!isObj(raw)) return 'not an object';
  const id = str(raw.id);
  const title = str(raw.title);
  if (!id || !/^[\w-]{1,100}$/.test(id)) return 'id missing or not an id';
  if (title === null) return `${id}: title missing`;
  if (!Array.isArray(raw.software) || !raw.software.length) return `${id}: software missing`;
  if (raw.informational !== undefined && typeof raw.informational !== 'boolean') return `${id}: informational not a boolean`;
  const references = strList(raw.references);
  if (!references) return `${id}: references missing`;
  const software: AffectedSoftware[] = [];
  for (const s of raw.software.slice(0, MAX_LIST_ITEMS)) {
    if (!isObj(s)) return `${id}: a software entry is not an object`;
    const type = str(s.type) as SoftwareType | null;
    const slug = str(s.slug);
    if (!type || !TYPES.has(type) || !slug || typeof s.patched !== 'boolean' || !isObj(s.affected_versions))
      return `${id}: a software entry misses type, slug, patched or affected_versions`;
    const patched = strList(s.patched_versions);
    if (!patched) return `${id}: patched_versions not a list`;
    const ranges: VersionRange[] = [];
    for (const r of Object.values(s.affected_versions).slice(0, MAX_LIST_ITEMS)) {
      if (
        !isObj(r) ||
        typeof r.from_version !== 'string' ||
        typeof r.to_version !== 'string' ||
        typeof r.from_inclusive !== 'boolean' ||
        typeof r.to_inclusive !== 'boolean'
      )
        return `${id}: a range misses from_version, to_version or their inclusive flags`;
      ranges.push({ from: bound(r.from_version), from_inclusive: r.from_inclusive, to: bound(r.to_version), to_inclusive: r.to_inclusive });
    }
    if (!ranges.length) return `${id}: a software entry has no affected versions`;
    software.push({
      type,
      slug: clip(slug, 200),
      name: clip(str(s.name) ?? slug, 300),
      ranges,
      patched: s.patched,
      patched_versions: patched.map(cleanVersion),
      remediation: str(s.remediation) && clip(str(s.remediation)!),
    });
  }
  let cvss: VulnRecord['cvss'] = null;
  if (isObj(raw.cvss) && typeof raw.cvss.score === 'number' && Number.isFinite(raw.cvss.score)) {
    cvss = { vector: str(raw.cvss.vector), score: raw.cvss.score, rating: str(raw.cvss.rating) ?? severityOf(raw.cvss.score) };
  }
  const cve = str(raw.cve);
  const cwe =
    isObj(raw.cwe) && raw.cwe.id !== undefined ? [{ id: `CWE-${String(raw.cwe.id)}`, name: clip(str(raw.cwe.name) ?? '', 300) }] : [];
  return {
    key: `wordfence:${id}`,
    source: 'wordfence',
    source_id: id,
    title: clip(title, 500),
    description: clip(str(raw.description) ?? ''),
    informational: raw.informational === true,
    cve,
    cve_link: str(raw.cve_link),
    aliases: cve ? [cve] : [],
    software,
    cvss,
    severity: cvss ? severityOf(cvss.score) : null,
    cwe,
    references,
    published: isoDate(raw.published),
    updated: isoDate(raw.updated),
    copyrights: isObj(raw.copyrights) ? raw.copyrights : {},
  };
}

const LETTER: Record<string, Severity> = { n: 'none', l: 'low', m: 'medium', h: 'high', c: 'critical' };

/**
 * One WPVulnerability answer (plugin, theme or core) → our records. `hint` is what the file name or the request says
 * (type and slug or core version) when the body does not. Error answers, null data or no entries → no records.
 */
export function normaliseWpvulnerability(raw: unknown, hint?: { type: SoftwareType; slug: string }): VulnRecord[] {
  if (!isObj(raw)) throw new ServiceError('svc_feed_invalid', 'A WPVulnerability answer must be a JSON object.', 400);
  if (raw.error !== undefined && raw.error !== 0 && raw.error !== '0') return [];
  const data = raw.data;
  if (!isObj(data) || !Array.isArray(data.vulnerability)) return [];
  const coreVersion = str(data.core) ?? (hint?.type === 'core' ? hint.slug : null);
  const type: SoftwareType = coreVersion
    ? 'core'
    : data.theme !== undefined
      ? 'theme'
      : data.plugin !== undefined
        ? 'plugin'
        : (hint?.type ?? 'plugin');
  const slug = coreVersion ? 'wordpress' : (str(data.plugin) ?? str(data.theme) ?? hint?.slug ?? '');
  if (!slug) return [];
  const out: VulnRecord[] = [];
  for (const e of data.vulnerability.slice(0, 10_000)) {
    if (!isObj(e)) continue;
    const name = clip(str(e.name) ?? '', 500);
    const sources = Array.isArray(e.source) ? e.source.filter(isObj) : [];
    const ids = sources.map((s) => str(s.id)).filter((x): x is string => !!x);
    let ranges: VersionRange[];
    let patched = false;
    let patchedVersions: string[] = [];
    if (coreVersion) {
      // Core answers are already filtered to that version: the entry is about exactly it; no fix is named.
      ranges = [{ from: coreVersion, from_inclusive: true, to: coreVersion, to_inclusive: true }];
    } else {
      const op = isObj(e.operator) ? e.operator : {};
      const min = str(op.min_version);
      const max = str(op.max_version);
      const minOp = str(op.min_operator);
      const maxOp = str(op.max_operator);
      // No bounds at all = every version (the official plugin skips such entries; the reference says not to).
      ranges = [
        {
          from: min ? cleanVersion(min) : null,
          from_inclusive: minOp !== 'gt',
          to: max ? cleanVersion(max) : null,
          to_inclusive: maxOp !== 'lt',
        },
      ];
      patched = String(op.unfixed ?? '0') !== '1';
      if (patched && max && maxOp === 'lt') patchedVersions = [cleanVersion(max)];
    }
    const impact = isObj(e.impact) ? e.impact : {};
    const c = isObj(impact.cvss) ? impact.cvss : null;
    const score = c ? Number(c.score) : NaN;
    const letter = c ? LETTER[String(c.severity ?? '').toLowerCase()] : undefined;
    const cvss = Number.isFinite(score) ? { vector: c ? str(c.vector) : null, score, rating: letter ?? severityOf(score) } : null;
    const cwe = (Array.isArray(impact.cwe) ? impact.cwe.filter(isObj) : []).map((w) => ({
      id: str(w.cwe) ?? '',
      name: clip(str(w.name) ?? '', 300),
    }));
    const uuid =
      str(e.uuid) ??
      createHash('sha256')
        .update(`${type}:${slug}:${coreVersion ?? ''}:${name}`)
        .digest('hex');
    const cve = ids.find((i) => /^CVE-\d{4}-\d+$/.test(i)) ?? null;
    const first = sources.map((s) => str(s.date)).find((d) => d);
    out.push({
      key: `wpvulnerability:${type}:${slug}:${uuid}${coreVersion ? `:${coreVersion}` : ''}`,
      source: 'wpvulnerability',
      source_id: uuid,
      title: name,
      description: clip(str(e.description) ?? ''),
      informational: false,
      cve,
      cve_link: cve ? (str(sources.find((s) => s.id === cve)?.link) ?? null) : null,
      aliases: [...new Set(ids)].slice(0, MAX_LIST_ITEMS),
      software: [{ type, slug, name: str(data.name) ?? slug, ranges, patched, patched_versions: patchedVersions, remediation: null }],
      cvss,
      severity: cvss ? severityOf(cvss.score) : (letter ?? null),
      cwe,
      references: sources.map((s) => str(s.link)).filter((x): x is string => !!x),
      published: isoDate(first ?? null),
      updated: typeof raw.updated === 'number' ? new Date(raw.updated * 1000).toISOString().replace(/\.000Z$/, 'Z') : null,
      copyrights: {},
    });
  }
  return out;
}

export interface StreamStats {
  records: number;
  skipped: number;
  /** The first few reasons a record was skipped. */
  skipped_reasons: string[];
  bytes: number;
}

/**
 * Streams a Wordfence feed (a JSON object whose values are records) and hands each valid record to `onRecord`, which
 * may wait (the caller writes to the store as it goes). Memory: one input chunk, the record being decoded (at most
 * MAX_RECORD_BYTES of JSON) and what `onRecord` keeps. A feed that is not one JSON object, is cut short, exceeds
 * `maxBytes` or holds a record over MAX_RECORD_BYTES is refused (svc_feed_invalid) after what was handed over.
 */
export async function streamWordfenceFeed(
  input: AsyncIterable<Uint8Array | string>,
  onRecord: (r: VulnRecord) => void | Promise<void>,
  maxBytes: number,
): Promise<StreamStats> {
  const stats: StreamStats = { records: 0, skipped: 0, skipped_reasons: [], bytes: 0 };
  // Imported when a feed is read, not at start: every process (each CLI command) paid about 25 ms for it.
  const { JSONParser } = await import('@streamparser/json');
  const parser = new JSONParser({ paths: ['$.*'], keepStack: false });
  const ready: VulnRecord[] = [];
  let sinceLast = 0;
  let sawRoot = false;
  let failure: Error | null = null;
  parser.onValue = ({ value }) => {
    sinceLast = 0;
    const r = normaliseWordfence(value);
    if (typeof r === 'string') {
      stats.skipped++;
      if (stats.skipped_reasons.length < 10) stats.skipped_reasons.push(r);
    } else ready.push(r);
  };
  parser.onError = (e) => {
    failure ??= e;
  };
  const bad = (why: string) => new ServiceError('svc_feed_invalid', `The feed is refused (${why}); the previous data is kept.`, 400);
  for await (const chunk of input) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    stats.bytes += buf.length;
    if (stats.bytes > maxBytes) throw bad(`larger than ${maxBytes} bytes`);
    if (!sawRoot) {
      const text = Buffer.from(buf).toString('utf8').trimStart();
      if (text) {
        if (text[0] !== '{') throw bad('not a JSON object keyed by record id');
        sawRoot = true;
      }
    }
    try {
      parser.write(buf);
    } catch (e) {
      failure ??= e as Error;
    }
    if (failure) throw bad(`not valid JSON: ${(failure as Error).message.slice(0, 200)}`);
    sinceLast += buf.length;
    if (sinceLast > MAX_RECORD_BYTES + buf.length) throw bad(`a record is larger than ${MAX_RECORD_BYTES} bytes`);
    while (ready.length) {
      stats.records++;
      await onRecord(ready.shift()!);
    }
  }
  if (!sawRoot) throw bad('empty');
  if (!parser.isEnded) {
    try {
      parser.end();
    } catch (e) {
      failure ??= e as Error;
    }
  }
  if (failure || !parser.isEnded) throw bad('cut short: the JSON document does not end');
  while (ready.length) {
    stats.records++;
    await onRecord(ready.shift()!);
  }
  return stats;
}
