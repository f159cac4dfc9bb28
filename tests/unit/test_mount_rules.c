/* Mount validation: the seed's rules, and the config errors that name the bad mount. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "codecell.h"
#include "mount_rules.h"

static void dest_rules(void)
{
        CHECK(mount_dest_problem("/data") == NULL);
        CHECK(mount_dest_problem("/data/sub-dir_2.x") == NULL);
        CHECK_STR(mount_dest_problem(""), "must not be empty");
        CHECK_STR(mount_dest_problem("data"), "must be absolute");
        CHECK_STR(mount_dest_problem("/"), "must not be the root");
        CHECK_STR(mount_dest_problem("/data/"), "must be normalized (no trailing \"/\")");
        CHECK_STR(mount_dest_problem("/a//b"), "must be normalized (no \"//\")");
        CHECK_STR(mount_dest_problem("/a/./b"), "must be normalized (no \".\" or \"..\")");
        CHECK_STR(mount_dest_problem("/a/.."), "must be normalized (no \".\" or \"..\")");
        CHECK_STR(mount_dest_problem("/a:b"), "must not contain ':', ',' or '\\'");
        CHECK_STR(mount_dest_problem("/a\nb"), "must not contain control characters");
        char longpath[300];
        memset(longpath, 'a', sizeof(longpath));
        longpath[0] = '/';
        longpath[299] = '\0';
        CHECK_STR(mount_dest_problem(longpath), "is longer than 255 bytes");
}

static void reserved_and_overlap(void)
{
        CHECK_STR(mount_dest_reserved("/work"), "/work");
        CHECK_STR(mount_dest_reserved("/work/x"), "/work");
        CHECK_STR(mount_dest_reserved("/usr/local"), "/usr");
        CHECK_STR(mount_dest_reserved("/codecell"), "/codecell");
        CHECK_STR(mount_dest_reserved("/lib64"), "/lib64");
        CHECK(mount_dest_reserved("/workspace") == NULL); /* a prefix, not a parent */
        CHECK(mount_dest_reserved("/data") == NULL);
        CHECK(paths_overlap("/data", "/data"));
        CHECK(paths_overlap("/data", "/data/x"));
        CHECK(paths_overlap("/data/x", "/data"));
        CHECK(!paths_overlap("/data", "/database"));
}

static void config_errors(void)
{
        codecell_error err = {0};
        codecell_config *c = codecell_config_new("ruby", &err);
        CHECK(c != NULL);
        char dir[] = "/tmp/codecell-test-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        CHECK(codecell_config_add_mount(c, dir, "/data", false, "inputs", &err) == 0);
        CHECK(codecell_config_add_mount(c, dir, "/data/sub", false, NULL, &err) < 0);
        CHECK(err.kind == CODECELL_ERR_INVALID);
        CHECK(strstr(err.message, "dest overlaps the mount at /data") != NULL);
        CHECK(codecell_config_add_mount(c, dir, "/etc/x", false, NULL, &err) < 0);
        CHECK(strstr(err.message, "overlaps the reserved /etc") != NULL);
        CHECK(codecell_config_add_mount(c, "/nonexistent-codecell", "/in", false, NULL, &err) < 0);
        CHECK(strstr(err.message, "mount /nonexistent-codecell:/in: source") != NULL);
        CHECK(strstr(err.message, "does not exist") != NULL);
        CHECK(codecell_config_add_mount(c, "/etc/hostname", "/in", false, NULL, &err) < 0);
        CHECK(strstr(err.message, "not a directory") != NULL);
        CHECK(codecell_config_add_mount(c, dir, "in", false, NULL, &err) < 0);
        CHECK(strstr(err.message, "dest must be absolute") != NULL);
        CHECK(codecell_config_set_limit(c, CODECELL_LIMIT_MEMORY_BYTES, 0, &err) < 0);
        CHECK(codecell_config_set_limit(c, CODECELL_LIMIT_MEMORY_BYTES, 1024, &err) < 0);
        CHECK(strstr(err.message, "below the minimum") != NULL);
        CHECK(codecell_config_set_limit(c, CODECELL_LIMIT_MEMORY_BYTES, 64 << 20, &err) == 0);
        CHECK(codecell_config_get_limit(c, CODECELL_LIMIT_MEMORY_BYTES) == 64 << 20);
        codecell_config_free(c);
        CHECK(codecell_config_new("cobol", &err) == NULL);
        CHECK(strstr(err.message, "unknown language \"cobol\"") != NULL);
        rmdir(dir);
}

int main(void)
{
        dest_rules();
        reserved_and_overlap();
        config_errors();
        CHECK_DONE();
}
