/* The tool description the model reads: how to use the cell, the libraries its interpreter
 * offers, the folders and host tools it can see. */
#ifndef CODECELL_DESCRIPTION_H
#define CODECELL_DESCRIPTION_H

#include "config.h"
#include "interpreter.h"
#include "tools.h"

/* The description for config, with the libraries probe found (none when it was not probed)
 * and tools' host tools. NULL when out of memory; the caller frees it. */
char *description_build(const codecell_config *config, const struct interpreter_info *probe,
                        struct tool_table *tools);

#endif
