/* libFuzzer: the configuration file loader (cells, mounts, limits, sessions, tools) on arbitrary
 * bytes. Cells it accepts are created without pools and freed at once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecell.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* A cell's "interpreter" is a host program that loading the file runs (to probe it):
         * the fuzzer must not choose programs for the host to run. */
        if (memmem(data, size, "interpreter", 11))
                return 0;
        char path[] = "/tmp/codecell-fuzz-config-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
                return 0;
        if (write(fd, data, size) == (ssize_t)size) {
                codecell_error err;
                codecell_cellset *set = codecell_cellset_load(path, CODECELL_CELLSET_NO_POOL, &err);
                for (size_t i = 0; i < codecell_cellset_size(set); i++)
                        (void)codecell_cell_description(codecell_cellset_cell(set, i));
                codecell_cellset_free(set);
        }
        close(fd);
        unlink(path);
        return 0;
}
