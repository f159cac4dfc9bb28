/* The seed's rules for where a user's folder may appear inside the sandbox. Pure functions,
 * so the unit tests can check every rule without touching the file system. */
#ifndef CODECELL_MOUNT_RULES_H
#define CODECELL_MOUNT_RULES_H

#include <stdbool.h>
#include <stddef.h>

#define MOUNT_DEST_MAX 255

/* NULL when dest is an absolute, normalized path that a mount may use; otherwise a static
 * phrase saying what is wrong ("must be absolute"). */
const char *mount_dest_problem(const char *dest);
/* The reserved tree that dest overlaps ("/work"), or NULL. */
const char *mount_dest_reserved(const char *dest);
/* True when one path is the other or lies beneath it ("/data" and "/data/x"). */
bool paths_overlap(const char *a, const char *b);

#endif
