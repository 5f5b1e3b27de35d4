// A database URL for logs and messages: the password is never printed. Its own module, so that a process on the lowdb
// engine names where its fleet is without loading the PostgreSQL driver.

/** A redacted form of the URL for messages: never print a password. */
export const redactUrl = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
