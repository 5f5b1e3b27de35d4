// WordPress's own vocabulary, as the child reads and answers it: user roles and post statuses. Declared once; the
// services, the abilities' schemas, the connector and the simulator all take it from here.

/** The built-in roles, most powerful first. */
export const USER_ROLES = ['administrator', 'editor', 'author', 'contributor', 'subscriber'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The statuses a post or page moves through (auto-draft and inherit are WordPress's internals, never listed). */
export const POST_STATUSES = ['publish', 'draft', 'pending', 'private', 'future', 'trash'] as const;
export type PostStatus = (typeof POST_STATUSES)[number];
