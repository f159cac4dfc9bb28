/* The operator's log of `codecell serve`: one JSON object per line, per call and per notable
 * event, on stderr or a file (docs/operations.md, "Logs"). Process-wide: one server per
 * process. Not the MCP log notifications a client asks for (mcp_log). */
#ifndef CODECELL_MCP_OPLOG_H
#define CODECELL_MCP_OPLOG_H

#include <jansson.h>
#include <stdbool.h>

enum oplog_level { OPLOG_DEBUG, OPLOG_INFO, OPLOG_WARNING, OPLOG_ERROR, OPLOG_OFF };

/* "debug", "info", "warning", "error", "off" into *ret; false for another name. */
bool oplog_level_parse(const char *name, enum oplog_level *ret);

/* Lines at level and above go to path (appended; NULL: stderr). content: calls also carry
 * their code, value, stdout and stderr. 0 or -errno (the file could not be opened). Call once,
 * before any thread logs. */
int oplog_open(const char *path, enum oplog_level level, bool content);
void oplog_close(void);
bool oplog_enabled(enum oplog_level level);
/* Whether calls may carry what the code and its results hold (--log-content). */
bool oplog_content(void);

/* Writes {"time", "level", "event", …fields} as one line, in one write. fields (may be NULL)
 * is taken over. Thread-safe. */
void oplog_event(enum oplog_level level, const char *event, json_t *fields);

#endif
