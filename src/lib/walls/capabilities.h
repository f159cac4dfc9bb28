/* Giving up capabilities for good, as a step of every guest's entry (sandbox_entry.c: the
 * exec'd sandbox's interpreter, a forked one's, the jail's child; the zygote's fork server
 * compiles this file too). */
#ifndef CODECELL_CAPABILITIES_H
#define CODECELL_CAPABILITIES_H

#include <stdint.h>

/* Empties the bounding, ambient, permitted, effective and inheritable sets of the calling
 * thread but for keep (a mask of bits 1 << CAP_*), which stays permitted, effective,
 * inheritable and ambient (it survives exec; a cell's zygote keeps CAP_SYS_ADMIN and
 * CAP_SYS_CHROOT in its user namespace). No allocation. 0, or -1 with errno. */
int capabilities_keep_only(uint64_t keep);
/* Empties the ambient, permitted, effective and inheritable sets, leaving the bounding set
 * (whose changes need CAP_SETPCAP): what any process may do. */
int capabilities_drop_held(void);

#endif
