/* The files of a run's output folder as MCP content of its tool result: embedded resources
 * when small, resource links (file_links.h) when larger. */
#ifndef CODECELL_MCP_FILE_CONTENTS_H
#define CODECELL_MCP_FILE_CONTENTS_H

#include "codecell.h"

struct mcp_server;
struct mcp_client;

/* `,{…}` for each file of res (the content array's tail), "" when none; NULL when out of
 * memory. A link is owned by c. */
char *mcp_file_contents(struct mcp_server *s, struct mcp_client *c, const codecell_result *res);

#endif
