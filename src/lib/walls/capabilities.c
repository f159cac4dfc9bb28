#include "capabilities.h"

#include <errno.h>
#include <stdint.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The sets given to capset: keep's capabilities (a mask of bits 1 << CAP_*), nothing else.
 * The raw call: glibc has no capset wrapper. */
static int set_held(uint64_t keep)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {{0}};
        for (int i = 0; i < 2; i++)
                data[i].effective = data[i].permitted = data[i].inheritable =
                        (uint32_t)(keep >> (32 * i));
        return (int)syscall(SYS_capset, &hdr, data);
}

int capabilities_drop_held(void)
{
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -1;
        return set_held(0);
}

int capabilities_keep_only(uint64_t keep)
{
        for (int cap = 0; cap <= 63; cap++)
                /* EPERM without CAP_SETPCAP (before the check of cap): fine when the cap is
                 * out of the bounding set already, or no cap at all (a jail inside another,
                 * whose walls dropped them all). */
                if (!(keep >> cap & 1) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
                    errno != EINVAL && !(errno == EPERM && prctl(PR_CAPBSET_READ, cap) <= 0))
                        return -1;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 || set_held(keep) < 0)
                return -1;
        for (int cap = 0; cap <= 63; cap++)
                if ((keep >> cap & 1) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
                        return -1;
        return 0;
}
