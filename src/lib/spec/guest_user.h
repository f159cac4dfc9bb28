/* Who the guest is on the host: as root, the engine runs it as nobody, never as uid 0 (the
 * cell's plan, and the interpreter's probe, which reads only what the guest could). */
#ifndef CODECELL_GUEST_USER_H
#define CODECELL_GUEST_USER_H

#define PRIVILEGED_GUEST_UID 65534
#define PRIVILEGED_GUEST_GID 65534

#endif
