#include "capabilities.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The sets given to capset: keep alone, or nothing (keep < 0). The raw call: glibc has no
 * capset wrapper. */
static int set_held(int keep)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {{0}};
        if (keep >= 0)
                data[keep / 32].effective = data[keep / 32].permitted =
                        data[keep / 32].inheritable = 1u << (keep % 32);
        return (int)syscall(SYS_capset, &hdr, data);
}

int capabilities_drop_held(void)
{
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -1;
        return set_held(-1);
}

int capabilities_keep_only(int keep)
{
        for (int cap = 0; cap <= 63; cap++)
                if (cap != keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        return -1;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 || set_held(keep) < 0)
                return -1;
        return keep >= 0 ? prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep, 0, 0) : 0;
}

int capabilities_drop_all(void)
{
        return capabilities_keep_only(-1);
}
