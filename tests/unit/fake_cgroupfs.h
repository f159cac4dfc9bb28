/* A fake cgroupfs for the cgroup unit tests: control files are plain files in a temporary
 * folder, written and read back as the kernel's would be. */
#ifndef CODECELL_TEST_FAKE_CGROUPFS_H
#define CODECELL_TEST_FAKE_CGROUPFS_H

#include <limits.h>
#include <stdio.h>

#include "check.h"
#include "util.h"

static void put(const char *dir, const char *file, const char *text)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        CHECK(write_file(path, text) == 0);
}

static void expect(const char *dir, const char *file, const char *text)
{
        char path[PATH_MAX], buf[256];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        CHECK(read_file(path, buf, sizeof(buf)) >= 0);
        CHECK_STR(buf, text);
}

#endif
