/* The caller's shared mappings, made private copies in the jailed process. A fork shares a
 * MAP_SHARED mapping with the caller instead of copying it: a file of root's mapped writable
 * would be written by the function through it whatever Landlock says (Landlock checks paths
 * when they are opened, and the caller opened it), and a shared anonymous region, an io_uring
 * ring, a memfd would carry the function's writes into the caller's memory. So every shared
 * mapping that is or may become writable is replaced, at the same address, by a private
 * anonymous copy of its bytes: the function sees the snapshot it would see of any other
 * memory, and its writes stay its own. One that cannot be copied (a device's, a file's past
 * its end) is unmapped. A shared mapping that may never be written (a file opened read-only)
 * is left: mprotect refuses it write access.
 *
 * Runs before Landlock and the rlimits, with /proc the jail's own; allocates nothing but the
 * copies (mmap). The copies count against the jail's memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "jail.h"

/* Whether a shared mapping mapped without write may be given it (the file opened for
 * writing): mprotect tells, and its protection is put back. */
static bool may_write(void *start, size_t len, int prot)
{
        if (mprotect(start, len, prot | PROT_WRITE) < 0)
                return false;
        (void)mprotect(start, len, prot);
        return true;
}

/* The bytes through process_vm_readv, which stops short where a read would fault (past a
 * file's end, a device's memory) instead of raising SIGBUS. (/proc/self/mem would do too,
 * but it is root's once the process is not dumpable.) */
static int private_copy(char *start, size_t len, int prot)
{
        char *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED)
                return -1;
        size_t done = 0;
        pid_t self = getpid();
        while (done < len) {
                struct iovec to = {copy + done, len - done}, from = {start + done, len - done};
                ssize_t n = process_vm_readv(self, &to, 1, &from, 1, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                done += (size_t)n;
        }
        if (done < len || mprotect(copy, len, prot) < 0 ||
            mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, start) == MAP_FAILED) {
                munmap(copy, len);
                return -1;
        }
        return 0;
}

/* One line of /proc/self/maps: "start-end perms offset dev inode path". */
static int unshare_line(const char *line)
{
        char *end;
        uintptr_t from = (uintptr_t)strtoull(line, &end, 16);
        if (*end != '-')
                return 0;
        uintptr_t to = (uintptr_t)strtoull(end + 1, &end, 16);
        if (*end != ' ' || strlen(end) < 5 || end[4] != 's' || to <= from)
                return 0;
        int prot = (end[1] == 'r' ? PROT_READ : 0) | (end[2] == 'w' ? PROT_WRITE : 0) |
                   (end[3] == 'x' ? PROT_EXEC : 0);
        char *start = (char *)from;
        size_t len = to - from;
        if (!(prot & PROT_WRITE) && !may_write(start, len, prot))
                return 0;
        if (private_copy(start, len, prot) == 0 || munmap(start, len) == 0)
                return 0;
        return -errno;
}

int jail_unshare_mappings(void)
{
        int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        int r = maps < 0 ? -errno : 0;
        /* Whole lines at a time; the kernel resumes each read after the last mapping it
         * listed, so a mapping replaced at the same address is not listed again. */
        char buf[8192];
        size_t have = 0;
        for (ssize_t n = 1; r == 0 && n > 0;) {
                n = read(maps, buf + have, sizeof(buf) - 1 - have);
                if (n < 0 && errno == EINTR) {
                        n = 1;
                        continue;
                }
                if (n < 0) {
                        r = -errno;
                        break;
                }
                have += (size_t)n;
                buf[have] = '\0';
                char *line = buf, *nl;
                while (r == 0 && (nl = strchr(line, '\n'))) {
                        *nl = '\0';
                        r = unshare_line(line);
                        line = nl + 1;
                }
                have -= (size_t)(line - buf);
                memmove(buf, line, have);
                if (have == sizeof(buf) - 1)
                        r = -E2BIG; /* a line longer than the buffer: a path of 8 KiB */
        }
        if (maps >= 0)
                close(maps);
        return r;
}
