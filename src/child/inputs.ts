// src/child/inputs.ts — what callers hand to the connector's user and post operations (validated by the services, typed here).
import { z } from 'zod';

export const ChildUserQuery = z.object({
  /** Substring of login, display name or e-mail (the child searches `*term*`). */
  search: z.string().optional(),
  /** Defaults to the five WordPress roles. */
  roles: z.array(z.string()).optional(),
});
export type ChildUserQuery = z.infer<typeof ChildUserQuery>;

export const NewChildUser = z.object({
  user_login: z.string(),
  user_pass: z.string(),
  user_email: z.string(),
  user_url: z.string().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  /** Unknown roles become `subscriber` on the child. */
  role: z.string().optional(),
});
export type NewChildUser = z.infer<typeof NewChildUser>;

/** `user_action update_user` fields; empty strings are ignored by the child, so a field cannot be cleared (§9.8). */
export const ChildUserUpdate = z.object({
  email: z.string().optional(),
  url: z.string().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  nickname: z.string().optional(),
  display_name: z.string().optional(),
  description: z.string().optional(),
  role: z.string().optional(),
  password: z.string().optional(),
});
export type ChildUserUpdate = z.infer<typeof ChildUserUpdate>;

export const ChildPostQuery = z.object({
  /** Defaults to all six statuses. */
  status: z.array(z.string()).optional(),
  search: z.string().optional(),
  /** `title`, `content`, or anything else for both. */
  search_on: z.string().optional(),
  /** `YYYY-MM-DD[ HH:MM:SS]` bounds on the modified date. */
  dtsstart: z.string().optional(),
  dtsstop: z.string().optional(),
  /** Default 50; 0 = no limit. */
  maximum: z.number().int().min(0).optional(),
  post_type: z.string().optional(),
});
export type ChildPostQuery = z.infer<typeof ChildPostQuery>;

/** `newpost` fields (§9.13). With `ID` the post is edited; core fields then replace the old ones. */
export const ChildPostInput = z.object({
  ID: z.number().int().positive().optional(),
  post_title: z.string(),
  post_content: z.string(),
  post_status: z.string(),
  post_name: z.string().optional(),
  post_excerpt: z.string().optional(),
  post_password: z.string().optional(),
  post_date: z.string().optional(),
  post_date_gmt: z.string().optional(),
  comment_status: z.string().optional(),
  ping_status: z.string().optional(),
  /** `post` when absent. */
  post_type: z.string().optional(),
  /** Comma-separated tag names. */
  post_tags: z.string().optional(),
  /** Comma-separated category names; missing categories are created by the child. */
  post_category: z.string().optional(),
  is_sticky: z.boolean().optional(),
  post_custom: z.record(z.string(), z.array(z.string())).optional(),
  post_featured_image: z.string().optional(),
});
export type ChildPostInput = z.infer<typeof ChildPostInput>;
