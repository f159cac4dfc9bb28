/* The tool description the model reads (seed 000's fixed text, adapted to codecell), followed
 * by the folders it can see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "images.h"

static void folder_section(FILE *f, const codecell_config *c, bool rw, const char *header)
{
        bool any = false;
        for (size_t i = 0; i < c->n_mounts; i++) {
                const struct cc_mount *m = &c->mounts[i];
                if (m->read_write != rw)
                        continue;
                if (!any)
                        fprintf(f, "\n\n%s", header);
                any = true;
                fprintf(f, "\n- `%s`", m->dest);
                if (*m->description)
                        fprintf(f, " — %s", m->description);
        }
}

char *description_build(const codecell_config *c, struct tool_table *tools)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        fputs(c->runtime->how_to_use, f);
        fputs(c->subprocesses
                      ? "- no network, and no access to the host filesystem outside the mounted\n"
                        "  folders listed below; the system's programs may be run as "
                        "subprocesses;\n"
                      : "- no network, no subprocesses, and no access to the host filesystem "
                        "outside\n"
                        "  the mounted folders listed below;\n",
              f);
        fputs("- a private writable scratch directory at `/work`, empty at the start of\n"
              "  every execution;\n"
              "- no state carried over between executions, except the contents of\n"
              "  read-write folders.\n"
              "\n",
              f);
        fputs(c->runtime->how_results, f);
        folder_section(f, c, false, "## Read-only folders (readable, never writable)");
        folder_section(f, c, true, "## Read-write folders (readable and writable)");
        images_describe(f, c->runtime->name, c->image_folder, c->limits[CODECELL_LIMIT_IMAGES],
                        c->limits[CODECELL_LIMIT_IMAGE_BYTES]);
        tools_describe(tools, &c->runtime->tools, f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}
