// Posts on child sites: listed across selected sites; read, created, edited, moved between statuses and deleted
// on one site. The child's `newpost` replaces a post's core fields wholesale (§9.13), so an edit first reads the
// post and sends back every field the caller did not change.
import type { ChildConnector, SiteCredentials } from '../child/connector.js';
import type { ChildPostInput } from '../child/inputs.js';
import type { ChildPost, ChildPostFull } from '../child/replies.js';
import { refuseBothFlags, requireConfirm } from '../core/confirm.js';
import { ServiceError } from '../core/errors.js';
import { gmtFromLocal, localFromGmt } from '../core/site-time.js';
import type { SiteRecord } from '../store/records.js';
import type { Fanned, FleetCall, SiteSelector, SiteSelectorService } from './selectors.js';

import { POST_STATUSES, type PostStatus } from '../child/wordpress.js';

export { POST_STATUSES, type PostStatus };
/** What a list shows without a status filter: WordPress's "All" (the trash is left out). */
const LISTED_BY_DEFAULT = POST_STATUSES.filter((s) => s !== 'trash');

export interface PostQuery {
  search?: string;
  search_on?: 'title' | 'content' | 'all';
  status?: readonly PostStatus[];
  /** YYYY-MM-DD, inclusive bounds on the modified date. */
  dtsstart?: string;
  dtsstop?: string;
  maximum?: number;
  post_type?: string;
}

/** The writable fields (§9.13); on an edit only those given change. */
export interface PostFields {
  post_title?: string;
  post_content?: string;
  post_status?: Exclude<PostStatus, 'trash'>;
  post_name?: string;
  post_excerpt?: string;
  post_password?: string;
  comment_status?: 'open' | 'closed';
  ping_status?: 'open' | 'closed';
  /** `YYYY-MM-DD HH:MM:SS`, site time / GMT. */
  post_date?: string;
  post_date_gmt?: string;
  post_tags?: string;
  post_category?: string;
  post_featured_image?: string;
  is_sticky?: boolean;
  post_custom?: Record<string, string[]>;
}

/**
 * Posts and pages go through the same child calls (§9.11–9.13, `post_type=page`); a Kind names which one a call is
 * about. A page is read through the child's post reader: its page reader (get_edit with post_type=page) answers
 * post_type "page" for any id, a post's too, while the post reader reports the real type, which is then checked.
 */
export interface Kind {
  type: 'post' | 'page';
  defaultMaximum: number;
}
export const POST_KIND: Kind = { type: 'post', defaultMaximum: 50 };
export const PAGE_KIND: Kind = { type: 'page', defaultMaximum: 10 };

const realDate = (ymd: string): boolean => {
  const d = new Date(`${ymd.slice(0, 10)}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === ymd.slice(0, 10);
};

function checkDates(q: PostQuery): void {
  for (const k of ['dtsstart', 'dtsstop'] as const) {
    const v = q[k];
    if (v !== undefined && !realDate(v))
      throw new ServiceError('svc_invalid_date', `${k} is not a real date: ${v} (use YYYY-MM-DD).`, 400, {
        params: { [k]: 'Invalid date value. Use a real date.' },
      });
  }
  if (q.dtsstart && q.dtsstop && q.dtsstart > q.dtsstop) {
    throw new ServiceError('svc_invalid_date_range', `dtsstart (${q.dtsstart}) is after dtsstop (${q.dtsstop}).`, 400);
  }
}

const postNotFound = (site: SiteRecord, id: number, kind: Kind = POST_KIND) =>
  kind.type === 'page'
    ? new ServiceError('svc_page_not_found', `No page with ID ${id} on ${site.url}.`, 404, { site_id: site.id, page_id: id })
    : new ServiceError('svc_post_not_found', `No post with ID ${id} on ${site.url}.`, 404, { site_id: site.id, post_id: id });

async function readPost(
  c: ChildConnector,
  creds: SiteCredentials,
  site: SiteRecord,
  id: number,
  postType = 'post',
  kind: Kind = POST_KIND,
): Promise<ChildPostFull> {
  const post = await c.getPost(creds, id, kind.type === 'page' ? 'post' : postType);
  if (!post || (kind.type === 'page' && post.post_type !== 'page')) throw postNotFound(site, id, kind);
  return post;
}

const mysqlFromIso = (iso: string): string => iso.slice(0, 19).replace('T', ' ');

/** A scheduled post needs a publication date; WordPress publishes at once when the date has passed. */
function checkSchedule(status: string, dateGmt: string | undefined, dateLocal: string | undefined): void {
  if (status !== 'future') return;
  if (!dateGmt && !dateLocal) {
    throw new ServiceError('svc_invalid_input', 'A scheduled (future) post needs a post_date or post_date_gmt.', 400, {
      params: { post_date: 'Required when post_status is future.' },
    });
  }
  if (dateGmt && Date.parse(`${dateGmt.replace(' ', 'T')}Z`) <= Date.now()) {
    throw new ServiceError(
      'svc_invalid_input',
      `post_date_gmt ${dateGmt} is not in the future; a scheduled post needs a future date.`,
      400,
      { params: { post_date_gmt: 'Must be in the future.' } },
    );
  }
}

function checkFieldDates(f: PostFields): void {
  for (const k of ['post_date', 'post_date_gmt'] as const) {
    const v = f[k];
    if (v !== undefined && !(realDate(v) && !Number.isNaN(Date.parse(`${v.replace(' ', 'T')}Z`)))) {
      throw new ServiceError('svc_invalid_date', `${k} is not a real date and time: ${v} (use YYYY-MM-DD HH:MM:SS).`, 400, {
        params: { [k]: 'Invalid date value.' },
      });
    }
  }
}

function newPostInput(f: PostFields & { post_title: string }, kind: Kind): ChildPostInput {
  return {
    post_type: kind.type === 'page' ? 'page' : undefined,
    post_title: f.post_title,
    post_content: f.post_content ?? '',
    post_status: f.post_status ?? 'draft',
    post_name: f.post_name,
    post_excerpt: f.post_excerpt,
    post_password: f.post_password,
    comment_status: f.comment_status ?? 'open',
    ping_status: f.ping_status ?? 'closed',
    post_date: f.post_date,
    post_date_gmt: f.post_date_gmt,
    post_tags: f.post_tags,
    post_category: f.post_category,
    post_featured_image: f.post_featured_image,
    is_sticky: f.is_sticky,
    post_custom: f.post_custom,
  };
}

/** The post as it is, with the caller's changes: what `newpost` with an ID needs so that nothing else changes. */
function editInput(cur: ChildPostFull, f: PostFields): ChildPostInput {
  const datesGiven = f.post_date !== undefined || f.post_date_gmt !== undefined;
  // A draft without a date keeps "publish when published"; sending its display date would pin it.
  const dated = cur.post_date_gmt !== '';
  return {
    ID: cur.id,
    post_type: cur.post_type === 'post' ? undefined : cur.post_type,
    post_title: f.post_title ?? cur.post_title,
    post_content: f.post_content ?? cur.post_content,
    post_status: f.post_status ?? cur.post_status,
    post_name: f.post_name ?? cur.post_name,
    post_excerpt: f.post_excerpt ?? cur.post_excerpt,
    post_password: f.post_password ?? cur.post_password,
    comment_status: f.comment_status ?? cur.comment_status,
    ping_status: f.ping_status ?? cur.ping_status,
    post_date: datesGiven ? f.post_date : dated ? cur.post_date : undefined,
    post_date_gmt: datesGiven ? f.post_date_gmt : dated ? mysqlFromIso(cur.post_date_gmt) : undefined,
    post_tags: f.post_tags ?? cur.post_tags,
    post_category: f.post_category ?? cur.post_category,
    is_sticky: f.is_sticky ?? cur.is_sticky,
    post_featured_image: f.post_featured_image ?? cur.post_featured_image ?? undefined,
    post_custom: f.post_custom,
  };
}

export interface SavedPost {
  site: SiteRecord;
  post_id: number;
  link: string;
  post_status: string;
  post_title: string;
}

/**
 * Both dates of a post when the caller set one: the child creates posts as auto-drafts, and WordPress resets the
 * date of a draft whose GMT date is unset — a scheduled post would be published at once, a back-dated one dated
 * today. The other date comes from the site's time zone (its last sync; UTC, WordPress's default, when unknown).
 */
function withBothDates<T extends { post_date?: string; post_date_gmt?: string }>(input: T, site: SiteRecord): T {
  const zone = site.timezone ?? '+00:00';
  if (input.post_date && !input.post_date_gmt) return { ...input, post_date_gmt: gmtFromLocal(input.post_date, zone) };
  if (input.post_date_gmt && !input.post_date) return { ...input, post_date: localFromGmt(input.post_date_gmt, zone) };
  return input;
}

export const POST_EDIT_FIELDS = [
  'post_title',
  'post_content',
  'post_status',
  'post_name',
  'post_excerpt',
  'post_password',
  'comment_status',
  'ping_status',
  'post_date',
  'post_date_gmt',
  'post_tags',
  'post_category',
  'post_featured_image',
  'is_sticky',
  'post_custom',
] as const;

/** What a page can be given: no tags, categories or stickiness (WordPress pages have none). */
export const PAGE_EDIT_FIELDS = POST_EDIT_FIELDS.filter((k) => k !== 'post_tags' && k !== 'post_category' && k !== 'is_sticky');

export interface StatusChange {
  site: SiteRecord;
  post_id: number;
  previous_status: string;
  post_status: PostStatus;
}

export interface DeletedPost {
  site: SiteRecord;
  post: ChildPostFull;
  deleted: boolean;
  dry_run: boolean;
}

/** Posts and pages on child sites (a Kind says which): one site by id or domain, or a fan-out over selected sites. */
export class PostService {
  constructor(private readonly selectors: SiteSelectorService) {}

  list(call: FleetCall, sel: SiteSelector, q: PostQuery, kind: Kind = POST_KIND): Promise<Fanned<ChildPost[]>> {
    checkDates(q);
    const query = {
      status: [...(q.status?.length ? q.status : LISTED_BY_DEFAULT)],
      search: q.search?.trim() || undefined,
      // The child searches title and content for any search_on other than title / content.
      search_on: q.search_on,
      // Whole days: the child compares full timestamps.
      dtsstart: q.dtsstart ? `${q.dtsstart} 00:00:00` : undefined,
      dtsstop: q.dtsstop ? `${q.dtsstop} 23:59:59` : undefined,
      maximum: q.maximum ?? kind.defaultMaximum,
      post_type: kind.type === 'page' ? 'page' : (q.post_type ?? 'post'),
    };
    return this.selectors.fanOut(call, sel, `list ${kind.type}s`, (c, creds) => c.listPosts(creds, query));
  }

  async get(
    ref: number | string,
    id: number,
    postType = 'post',
    kind: Kind = POST_KIND,
  ): Promise<{ site: SiteRecord; post: ChildPostFull }> {
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => ({ site, post: await readPost(c, creds, site, id, postType, kind) }));
  }

  async create(ref: number | string, f: PostFields & { post_title: string }, kind: Kind = POST_KIND): Promise<SavedPost> {
    checkFieldDates(f);
    const site = this.selectors.reachable(ref);
    const input = withBothDates(newPostInput(f, kind), site);
    checkSchedule(input.post_status, input.post_date_gmt, input.post_date);
    return this.selectors.onChild(site, async (c, creds) => {
      const saved = await c.savePost(creds, input);
      // What WordPress made of it (a "future" date already past is published), not what was asked.
      return {
        site,
        post_id: saved.post_id,
        link: saved.link,
        post_status: saved.post_status ?? input.post_status,
        post_title: input.post_title,
      };
    });
  }

  async update(ref: number | string, id: number, f: PostFields, kind: Kind = POST_KIND): Promise<SavedPost & { updated: string[] }> {
    const fieldNames: readonly (keyof PostFields)[] = kind.type === 'page' ? PAGE_EDIT_FIELDS : POST_EDIT_FIELDS;
    const updated = fieldNames.filter((k) => f[k] !== undefined);
    if (updated.length === 0)
      throw new ServiceError(
        'svc_missing_fields',
        `At least one field must be provided to update the ${kind.type}: ${fieldNames.join(', ')}.`,
        400,
      );
    checkFieldDates(f);
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => {
      const datesGiven = f.post_date !== undefined || f.post_date_gmt !== undefined;
      const edited = editInput(await readPost(c, creds, site, id, 'post', kind), f);
      const input = datesGiven ? withBothDates(edited, site) : edited;
      checkSchedule(input.post_status, input.post_date_gmt, input.post_date);
      const saved = await c.savePost(creds, input);
      return {
        site,
        post_id: saved.post_id,
        link: saved.link,
        post_status: saved.post_status ?? input.post_status,
        post_title: input.post_title,
        updated,
      };
    });
  }

  /**
   * publish, draft and trash are the child's own post actions (draft from the trash is a restore); pending, private
   * and future are an edit of the status alone. A future status needs the post to carry a future date already.
   */
  async setStatus(ref: number | string, id: number, status: PostStatus, kind: Kind = POST_KIND): Promise<StatusChange> {
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => {
      const cur = await readPost(c, creds, site, id, 'post', kind);
      const out = { site, post_id: id, previous_status: cur.post_status, post_status: status };
      if (cur.post_status === status) return out;
      if (status === 'publish' || status === 'trash' || status === 'draft') {
        const action = status === 'draft' ? (cur.post_status === 'trash' ? 'restore' : 'unpublish') : status;
        const done = await c.postAction(creds, action, id);
        if (!done) throw postNotFound(site, id, kind);
        // The child reports the status the post has now: trust it, not the request.
        if (done.post_status && done.post_status !== status) {
          throw new ServiceError(
            'svc_status_not_changed',
            `${site.url} left ${kind.type} ${id} ${done.post_status} instead of ${status}.`,
            422,
            { previous_status: cur.post_status, post_status: done.post_status },
          );
        }
        return out;
      }
      if (status === 'future' && !(cur.post_date_gmt && Date.parse(cur.post_date_gmt) > Date.now())) {
        throw new ServiceError(
          'svc_invalid_status_change',
          `${kind.type === 'page' ? 'Page' : 'Post'} ${id} has no future date to be scheduled for; set post_status future with a post_date through update-${kind.type}-v1 instead.`,
          400,
        );
      }
      await c.savePost(creds, editInput(cur, { post_status: status }));
      return out;
    });
  }

  /** Permanent (the child's `delete`); moving to the trash is a status change. */
  async delete(
    ref: number | string,
    id: number,
    flags: { confirm?: boolean; dry_run?: boolean },
    kind: Kind = POST_KIND,
  ): Promise<DeletedPost> {
    refuseBothFlags(flags);
    const site = this.selectors.reachable(ref);
    return this.selectors.onChild(site, async (c, creds) => {
      const post = await readPost(c, creds, site, id, 'post', kind);
      if (flags.dry_run) return { site, post, deleted: false, dry_run: true };
      requireConfirm(
        flags,
        `Deleting a ${kind.type} requires confirm=true (preview with dry_run=true; update-${kind.type}-status-v1 with trash is undoable).`,
      );
      if (!(await c.postAction(creds, 'delete', id))) throw postNotFound(site, id, kind);
      return { site, post, deleted: true, dry_run: false };
    });
  }
}
