#include "mount_rules.h"

#include "codecell.h"

#include <string.h>

/* Trees the engine itself builds; a user mount over or under them would hide the interpreter,
 * the prelude or the scratch folders. */
static const char *const reserved_trees[] = {
        "/work", "/usr",  "/codecell", "/proc",  "/dev",   "/etc",    "/tmp",
        "/bin",  "/sbin", "/lib",      "/lib32", "/lib64", "/libx32", "/sys",
};

const char *mount_dest_problem(const char *dest)
{
        if (!dest || !*dest)
                return "must not be empty";
        if (dest[0] != '/')
                return "must be absolute";
        if (strlen(dest) > MOUNT_DEST_MAX)
                return "is longer than 255 bytes";
        if (strcmp(dest, "/") == 0)
                return "must not be the root";
        for (const char *p = dest; *p; p++) {
                unsigned char c = (unsigned char)*p;
                if (c < 0x20 || c == 0x7f)
                        return "must not contain control characters";
                if (c == ':' || c == ',' || c == '\\')
                        return "must not contain ':', ',' or '\\'";
        }
        /* Normalized: no empty, "." or ".." component and no trailing slash. */
        const char *comp = dest + 1;
        for (;;) {
                const char *end = strchr(comp, '/');
                size_t len = end ? (size_t)(end - comp) : strlen(comp);
                if (len == 0)
                        return end ? "must be normalized (no \"//\")"
                                   : "must be normalized (no trailing \"/\")";
                if ((len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
                        return "must be normalized (no \".\" or \"..\")";
                if (!end)
                        break;
                comp = end + 1;
        }
        return NULL;
}

bool paths_overlap(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        size_t n = la < lb ? la : lb;
        if (strncmp(a, b, n) != 0)
                return false;
        if (la == lb)
                return true;
        /* The shorter is a prefix: it overlaps only on a component boundary. */
        const char *longer = la > lb ? a : b;
        return longer[n] == '/';
}

const char *mount_dest_reserved(const char *dest)
{
        for (size_t i = 0; i < sizeof(reserved_trees) / sizeof(reserved_trees[0]); i++)
                if (paths_overlap(dest, reserved_trees[i]))
                        return reserved_trees[i];
        return NULL;
}

bool codecell_mount_mode_parse(const char *name, codecell_mount_mode *ret)
{
        static const struct {
                const char *name;
                codecell_mount_mode mode;
        } modes[] = {{"ro", CODECELL_MOUNT_READ_ONLY},
                     {"rw", CODECELL_MOUNT_READ_WRITE},
                     {"exec", CODECELL_MOUNT_READ_ONLY_EXEC}};
        for (size_t i = 0; name && i < sizeof(modes) / sizeof(modes[0]); i++)
                if (strcmp(name, modes[i].name) == 0) {
                        *ret = modes[i].mode;
                        return true;
                }
        return false;
}
