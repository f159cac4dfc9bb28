#include "config_cell.h"

#include <stdio.h>

#include "commands.h"

static void list_cells(const codecell_cellset *set)
{
        fputs(" (it has:", stderr);
        for (size_t k = 0; k < codecell_cellset_size(set); k++)
                fprintf(stderr, " %s", codecell_cellset_name(set, k));
        fputs(")\n", stderr);
}

int cell_from_config(const char *who, const char *path, const char *name,
                     const codecell_cellset_caps *caps, codecell_cellset **ret_set,
                     size_t *ret_index)
{
        *ret_set = NULL;
        codecell_error err = {0};
        /* No pool: one run or one session, started cold, as with flags. */
        codecell_cellset *set =
                codecell_cellset_load_capped(path, CODECELL_CELLSET_NO_POOL, caps, &err);
        if (!set) {
                fprintf(stderr, "%s: %s\n", who, err.message);
                return err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
        }
        int i = name ? codecell_cellset_find(set, name) : codecell_cellset_size(set) == 1 ? 0 : -1;
        if (i < 0) {
                if (name)
                        fprintf(stderr, "%s: --cell %s: %s has no such cell", who, name, path);
                else
                        fprintf(stderr, "%s: %s has %zu cells: name one with --cell", who, path,
                                codecell_cellset_size(set));
                list_cells(set);
                codecell_cellset_free(set);
                return EXIT_USAGE;
        }
        *ret_set = set;
        *ret_index = (size_t)i;
        return 0;
}
