/* Giving up every capability for good. */
#ifndef CODECELL_CAPABILITIES_H
#define CODECELL_CAPABILITIES_H

/* Empties the bounding, ambient, permitted, effective and inheritable sets of the calling
 * thread. No allocation. 0, or -1 with errno. */
int capabilities_drop_all(void);

#endif
