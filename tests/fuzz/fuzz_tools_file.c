/* libFuzzer: the tools file loader (JSON with paths, names, schemas) on arbitrary bytes, and
 * the description built from what it accepts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "codecell.h"

static codecell_cell *cell;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        codecell_error err;
        if (!cell) {
                codecell_config *c = codecell_config_new("ruby", &err);
                codecell_config_set_policy(c, CODECELL_POLICY_IGNORE);
                codecell_config_set_pool(c, 0, &err);
                cell = codecell_cell_new(c, &err);
                codecell_config_free(c);
                if (!cell)
                        abort();
        }
        /* A fresh cell now and then, so accepted tools do not pile up. */
        static int n;
        if (++n % 200 == 0) {
                codecell_cell_free(cell);
                cell = NULL;
                return LLVMFuzzerTestOneInput(data, size);
        }
        char path[] = "/tmp/codecell-fuzz-tools-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
                return 0;
        if (write(fd, data, size) == (ssize_t)size)
                (void)codecell_cell_load_tools(cell, path, &err);
        close(fd);
        unlink(path);
        (void)codecell_cell_description(cell);
        return 0;
}
