// src/child/replies.ts — zod schemas of the raw child replies other than `stats`, and the post / user-profile records built from them (§7, §9).
import { z } from 'zod';
import { cleanText } from '../core/storable-text.js';
import { ChildError } from './child-error.js';
import { parseChildJson } from './envelope.js';
import { Count, Flag, LongText, RawStats, RawUser, Text, isoFromMysqlGmt, isoFromUnix, phpMap } from './snapshot.js';

/** An object whose fields are all optional, which PHP sends as `[]` when it is empty. */
function phpObject<S extends z.ZodRawShape>(shape: S) {
  const object = z.object(shape);
  return z.union([object, z.tuple([]).transform(() => ({}) as z.output<typeof object>)]);
}

/** Unsigned `stats` to an unconnected child (§7.1). */
export const PreflightReply = z.object({ version: Text, wpversion: Text });

/** `register` success: a stats snapshot plus these keys (§7.5). */
export const RegisterReply = RawStats.extend({ register: z.string(), regverify: z.string().optional(), user: Text.optional() });

export const PluginActionReply = z.object({
  status: z.string(),
  sync: RawStats.optional(),
  other_data: phpObject({ plugin_action_data: phpMap(z.unknown()).optional() }).optional(),
});

/**
 * `installplugintheme` (§9.5): install_results maps each package's file name to whether WordPress installed it;
 * install_items names what was installed (plugin file or theme stylesheet, and the version read from its header).
 */
export const InstallReply = z.object({
  installation: z.string(),
  destination_name: Text.nullable().optional(),
  install_results: phpMap(z.union([z.boolean(), z.number(), z.string()])).optional(),
  other_data: phpObject({
    install_items: z.array(z.object({ name: Text.optional(), version: Text.optional(), slug: Text })).optional(),
  }).optional(),
});

export const ThemeActionReply = z.object({
  status: z.string().optional(),
  // A string `error` is handled by openReply; the object form refuses the active theme or its parent (§9.4).
  error: z.object({ is_activated_theme: Text.optional(), is_activated_parent: Text.optional() }).optional(),
  sync: RawStats.optional(),
  other_data: phpObject({
    theme_action_data: phpMap(z.unknown()).optional(),
    theme_deactivate_data: phpMap(z.object({ slug: Text })).optional(),
  }).optional(),
});

/** One item of an upgrade reply's other_data.updated_data: `version` is what is on disk after the upgrade. */
const UpdatedData = z.object({
  name: Text.optional(),
  old_version: Text.optional(),
  slug: Text.optional(),
  success: Flag.optional(),
  version: Text.optional(),
  error: Text.optional(),
});

/** `upgradeplugintheme` and `upgradetranslation` (updates reference §5.2). A top-level string `error` is handled by openReply. */
export const UpgradeReply = z.object({
  upgrades: phpMap(z.union([z.boolean(), z.number(), z.string(), z.null()])).optional(),
  upgrades_error: phpMap(Text).optional(),
  other_data: phpObject({
    updated_data: phpMap(UpdatedData).optional(),
    upgrade_error_codes: phpMap(z.unknown()).optional(),
  }).optional(),
  sync: RawStats.optional(),
});

/** `upgrade` (core): SUCCESS, WPERROR, NORESPONSE or LOCALIZATION; versions only when an offer was installed. */
export const CoreUpgradeReply = z.object({
  upgrade: Text.optional(),
  old_version: Text.optional(),
  version: Text.optional(),
  other_data: z.unknown().optional(),
});

export const UsersReply = z.array(RawUser);

export const UserActionReply = z.object({
  status: z.string(),
  user_data: z
    .object({
      role: z.union([Text, z.boolean(), z.null()]).default(''),
      first_name: Text.default(''),
      last_name: Text.default(''),
      nickname: Text.default(''),
      display_name: Text.default(''),
      user_email: Text.default(''),
      user_url: Text.default(''),
      description: Text.default(''),
    })
    .optional(),
  other_data: phpObject({ users_data: z.union([z.tuple([]), z.object({ user_id: Text })]).optional() }).optional(),
});

export const NewUserReply = z.object({
  added: z.literal(true),
  other_data: z.object({ new_user_data: z.object({ user_id: Count }) }),
});

/** `[]` means the connection admin was not found (§9.10). */
export const AdminPasswordReply = z.union([z.object({ added: z.literal(true) }), z.tuple([])]);

const RawPost = z.object({
  id: Count,
  post_type: Text.default('post'),
  status: Text.default(''),
  title: Text.default(''),
  comment_count: Count.default(0),
  dts: z.union([Count, z.literal(false), z.null()]).default(null),
  author: Text.default(''),
  authorEmail: Text.default(''),
  categories: Text.default(''),
  tags: Text.default(''),
});
/** A bare list; `""` when no `status` was sent (§9.11). */
export const PostsReply = z.union([z.array(RawPost), z.literal('')]);

/** `get_edit` payload: base64 blobs, decoded by toChildPostFull (§9.12). */
const EditPayload = z.object({
  new_post: z.string(),
  post_custom: z.string().default(''),
  post_category: z.string().default(''),
  post_featured_image: z.string().default(''),
  post_gallery_images: z.string().default(''),
});

/** What the child says a post became (post_action_data, new_post_data): its status and dates after the change. */
const PostAfter = z.object({ new_status: Text.optional(), post_date: Text.optional(), post_date_gmt: Text.optional() }).loose();

export const PostActionReply = z.object({
  status: z.string(),
  // get_edit sends the post; unpublish echoes the change it made ({ID, post_status}); the others send [].
  my_post: z.union([EditPayload, z.object({ ID: Text, post_status: Text }), z.literal(false), z.tuple([])]).optional(),
  other_data: phpObject({ post_action_data: z.union([z.tuple([]), PostAfter]).optional() }).optional(),
});

export const NewPostReply = z.object({
  added: z.literal(true),
  added_id: Count,
  link: Text.default(''),
  other_data: phpObject({ new_post_data: z.union([PostAfter, z.tuple([])]).optional() }).optional(),
});

export const DisconnectReply = z.object({ result: z.literal('success') });
export const DeactivateReply = z.object({ deactivated: z.literal(true) });
export const SecurityReply = phpMap(z.string());

// ---- records for callers ----

export const ChildUserProfile = z.object({
  id: z.number().int(),
  role: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  nickname: z.string(),
  display_name: z.string(),
  email: z.string(),
  url: z.string(),
  description: z.string(),
});
export type ChildUserProfile = z.infer<typeof ChildUserProfile>;

export const ChildPost = z.object({
  id: z.number().int(),
  post_type: z.string(),
  status: z.string(),
  title: z.string(),
  comment_count: z.number().int(),
  /** ISO 8601 UTC: modified time (publish time for `future` posts), null when the child sent none. */
  date: z.string().nullable(),
  /** Author nicename, or "removed". */
  author: z.string(),
  author_email: z.string(),
  /** Comma-joined names, as the child sends them. */
  categories: z.string(),
  tags: z.string(),
});
export type ChildPost = z.infer<typeof ChildPost>;

const GalleryImage = z.object({
  id: z.string(),
  src: z.string(),
  title: z.string(),
  alt: z.string(),
  caption: z.string(),
  description: z.string(),
});
const RawGallery = z
  .array(
    z
      .object({
        id: Text,
        src: Text.default(''),
        title: Text.default(''),
        alt: Text.default(''),
        caption: LongText.default(''),
        description: LongText.default(''),
      })
      .loose(),
  )
  .max(1000);

export const ChildPostFull = z.object({
  id: z.number().int(),
  post_type: z.string(),
  post_title: z.string(),
  post_content: z.string(),
  post_status: z.string(),
  post_name: z.string(),
  post_excerpt: z.string(),
  post_password: z.string(),
  /** Site-local `Y-m-d H:i:s`, as WordPress stores it. */
  post_date: z.string(),
  /** ISO 8601 UTC, or "" for a draft that has none. */
  post_date_gmt: z.string(),
  comment_status: z.string(),
  ping_status: z.string(),
  post_category: z.string(),
  post_tags: z.string(),
  is_sticky: z.boolean(),
  post_custom: z.record(z.string(), z.array(z.unknown())),
  post_featured_image: z.string().nullable(),
  /** The images of the post's gallery shortcode, as the child lists them. */
  post_gallery_images: z.array(GalleryImage),
});
export type ChildPostFull = z.infer<typeof ChildPostFull>;

export function toChildPost(raw: z.infer<typeof RawPost>): ChildPost {
  return {
    id: Math.trunc(raw.id),
    post_type: raw.post_type,
    status: raw.status,
    title: raw.title,
    comment_count: Math.trunc(raw.comment_count),
    date: typeof raw.dts === 'number' ? isoFromUnix(raw.dts) : null,
    author: raw.author,
    author_email: raw.authorEmail,
    categories: raw.categories,
    tags: raw.tags,
  };
}

const EditedPost = z.object({
  post_title: Text.default(''),
  post_content: LongText.default(''),
  post_status: Text.default(''),
  post_name: Text.default(''),
  post_excerpt: LongText.default(''),
  post_password: Text.default(''),
  post_date: Text.default(''),
  post_date_gmt: Text.default(''),
  comment_status: Text.default(''),
  ping_status: Text.default(''),
  post_type: Text.default('post'),
  post_tags: Text.default(''),
  is_sticky: Flag.default(false),
});
const PostCustom = z.union([z.record(z.string(), z.array(z.unknown())), z.tuple([]).transform(() => ({}))]);

/** A base64 text of the child's, cleaned as every child text is (envelope.ts parseChildJson). */
function fromBase64(blob: string): string {
  return cleanText(Buffer.from(blob, 'base64').toString('utf8'));
}

function base64Json<T extends z.ZodType>(blob: string, schema: T, what: string): z.output<T> {
  let value: unknown;
  try {
    value = parseChildJson(fromBase64(blob));
  } catch {
    throw new ChildError('bad_reply', `Invalid reply from the child site: ${what} is not base64 JSON.`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ChildError('bad_reply', `Invalid reply from the child site: unexpected ${what}.`);
  return parsed.data;
}

export function toChildPostFull(id: number, payload: z.infer<typeof EditPayload>): ChildPostFull {
  const post = base64Json(payload.new_post, EditedPost, 'new_post');
  const custom = payload.post_custom === '' ? {} : base64Json(payload.post_custom, PostCustom, 'post_custom');
  const image = fromBase64(payload.post_featured_image);
  return {
    id,
    post_type: post.post_type,
    post_title: post.post_title,
    post_content: post.post_content,
    post_status: post.post_status,
    post_name: post.post_name,
    post_excerpt: post.post_excerpt,
    post_password: post.post_password,
    post_date: post.post_date,
    post_date_gmt: post.post_date_gmt.startsWith('0000') ? '' : isoFromMysqlGmt(post.post_date_gmt),
    comment_status: post.comment_status,
    ping_status: post.ping_status,
    post_category: fromBase64(payload.post_category),
    post_tags: post.post_tags,
    is_sticky: post.is_sticky,
    post_custom: custom,
    // get_post_thumbnail_id() gives 0 (or "") when there is no featured image.
    post_featured_image: image === '' || image === '0' ? null : image,
    post_gallery_images:
      payload.post_gallery_images === ''
        ? []
        : base64Json(payload.post_gallery_images, RawGallery, 'post_gallery_images').map(
            ({ id, src, title, alt, caption, description }) => ({ id, src, title, alt, caption, description }),
          ),
  };
}
