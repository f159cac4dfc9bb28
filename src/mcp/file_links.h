/* Links to files a run handed back that were too large to embed in its tool result: the client
 * that got the result reads them with resources/read until they expire. Each link is a random
 * 128-bit token (unguessable), owned by the MCP client it was given to (an MCP session over
 * HTTP, the token of 2026-07-28 requests, the process's peer over stdio), and the store is
 * bounded in bytes: the oldest links go first to make room. Thread-safe (its own lock). */
#ifndef CODECELL_MCP_FILE_LINKS_H
#define CODECELL_MCP_FILE_LINKS_H

#include <jansson.h>
#include <stddef.h>

#define FILE_LINK_SCHEME "codecell://files/"

struct file_links;

/* ttl_ms: how long a link may be read; max_bytes: the files kept at once. NULL: no memory. */
struct file_links *file_links_new(double ttl_ms, size_t max_bytes);
void file_links_free(struct file_links *l);
/* name as one URI path segment (unreserved characters as they are, others %XX), malloc'd. */
char *file_link_segment(const char *name);
/* Keeps a copy of the file for owner and returns its URI (malloc'd), or NULL when out of memory
 * or when the file alone is larger than the store. */
char *file_links_add(struct file_links *l, const char *owner, const char *name,
                     const char *mime_type, const void *data, size_t len);
/* The resources/read result ({contents: [{uri, mimeType, text | blob}]}) of uri for owner, or
 * NULL when there is no such link for that owner (never given, another client's, expired). */
json_t *file_links_read(struct file_links *l, const char *owner, const char *uri);
/* Forgets every link of owner (its MCP session ended). */
void file_links_drop_owner(struct file_links *l, const char *owner);

#endif
