/* Tools of MCP servers in the guest's own language (tool_signatures.c), for the description's
 * Tools section (tools.c) and SB.describe. */
#ifndef CODECELL_TOOL_SIGNATURES_H
#define CODECELL_TOOL_SIGNATURES_H

#include <stdio.h>

#include "runtime.h"
#include "tools.h"

/* With more tools than this, the description lists names and summaries only. */
#define TOOLS_DESCRIBED_IN_FULL 40

/* "Memory.create_entities" / "memory.create_entities": how the guest calls an MCP tool. */
void tool_binding_name(FILE *f, const struct tool_syntax *syn, const struct tool *tool);
/* The "### name" entry of an MCP tool: hints, description, signature, argument comments. */
void tool_signature_describe(FILE *f, const struct tool_syntax *syn, const struct tool *tool);
/* One line of the short list: "- `Memory.create_entities` (destructive) — Create …". */
void tool_summary_line(FILE *f, const struct tool_syntax *syn, const struct tool *tool);
/* The paragraph on bindings, when the cell has MCP tools. */
void tool_signatures_intro(FILE *f, const struct tool_syntax *syn);
/* The paragraph that says to use SB.describe, when there are n tools, too many to show. */
void tool_signatures_many(FILE *f, const struct tool_syntax *syn, size_t n);

#endif
