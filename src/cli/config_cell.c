#include "config_cell.h"

#include <inttypes.h>
#include <stdio.h>

#include "cell_flags.h"
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

const char *cell_shaping_flag(const struct cell_flags *f)
{
        return f->lang            ? "--lang"
               : f->n_mounts      ? "--mount"
               : f->tools         ? "--tools"
               : f->subprocesses  ? "--allow-subprocesses"
               : f->interpreter   ? "--interpreter"
               : f->n_libraries   ? "--library"
               : f->start         ? "--start"
               : f->n_allow_net   ? "--allow-net"
               : f->output_folder ? (f->output_flag ? f->output_flag : "--output-folder")
                                  : NULL;
}

/* The flag of each limit a verb may narrow a configured cell by. */
static const struct {
        codecell_limit limit;
        const char *flag;
} narrowing[] = {
        {CODECELL_LIMIT_TIMEOUT_MS, "--timeout"},
        {CODECELL_LIMIT_CPU_MS, "--cpu"},
        {CODECELL_LIMIT_MEMORY_BYTES, "--memory"},
        {CODECELL_LIMIT_OUTPUT_BYTES, "--max-output"},
};

int cell_from_config_narrowed(const struct cell_flags *f, const char *path, const char *name,
                              codecell_cellset **ret_set, size_t *ret_index)
{
        codecell_cellset_caps caps = {.raise_unsupported = f->policy == CODECELL_POLICY_RAISE};
        for (size_t i = 0; i < sizeof(narrowing) / sizeof(narrowing[0]); i++)
                caps.limits[narrowing[i].limit] = f->limits[narrowing[i].limit];
        int r = cell_from_config(f->who, path, name, &caps, ret_set, ret_index);
        if (r != EXIT_OK)
                return r;
        codecell_cell_info info;
        codecell_cell_info_get(codecell_cellset_cell(*ret_set, *ret_index), &info);
        for (size_t i = 0; i < sizeof(narrowing) / sizeof(narrowing[0]); i++) {
                codecell_limit l = narrowing[i].limit;
                if (caps.limits[l] && info.limits[l] < caps.limits[l]) {
                        fprintf(stderr,
                                "%s: %s %s: the cell \"%s\" has %s %" PRIu64
                                ", and beside --config a limit flag only narrows\n",
                                f->who, narrowing[i].flag, f->limit_text[l],
                                codecell_cellset_name(*ret_set, *ret_index), codecell_limit_name(l),
                                info.limits[l]);
                        codecell_cellset_free(*ret_set);
                        *ret_set = NULL;
                        return EXIT_USAGE;
                }
        }
        return EXIT_OK;
}
