/* Header values of MCP 2026-07-28 over HTTP (Streamable HTTP, Value Encoding). */
#ifndef CODECELL_MCP_HEADERS_H
#define CODECELL_MCP_HEADERS_H

/* A header value, decoded when it is in the Base64 sentinel form ("=?base64?…?="), else a copy.
 * Caller frees; NULL when the encoding is broken, the value decodes to one holding a NUL, or
 * out of memory. */
char *mcp_header_decode(const char *value);

#endif
