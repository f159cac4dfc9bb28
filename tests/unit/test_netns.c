/* The recycled network namespaces (netns.c): an empty namespace is kept for the next sandbox,
 * one with a socket left in it never is, and taking and giving back leave the calling thread
 * where it was. Needs root (the recycling is root-only); skipped otherwise. */
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "netns.h"

static unsigned long inode_of(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static unsigned long own_netns(void)
{
        struct stat st;
        return stat("/proc/thread-self/ns/net", &st) == 0 ? (unsigned long)st.st_ino : 0;
}

int main(void)
{
        if (geteuid() != 0) {
                printf("skipped: recycling network namespaces needs root\n");
                return 77;
        }
        codecell_error err = {0};
        struct netns_stock st;
        netns_stock_init(&st);
        unsigned long home = own_netns();

        /* A new one, not ours; the thread is back home after making it. */
        int a = netns_stock_take(&st, &err);
        CHECK(a >= 0);
        CHECK(inode_of(a) != home && own_netns() == home);

        /* Empty: kept, and given to the next taker. */
        unsigned long a_inode = inode_of(a);
        netns_stock_give_back(&st, a);
        CHECK(st.n == 1);
        int b = netns_stock_take(&st, &err);
        CHECK(b >= 0 && inode_of(b) == a_inode && st.n == 0);

        /* A socket bound in it (held open here, as a socket in flight would be): not kept. */
        int back;
        CHECK(netns_enter(b, &back, &err) == 0);
        int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        memcpy(addr.sun_path, "\0codecell-test-leftover", 23);
        CHECK(sock >= 0 && bind(sock, (struct sockaddr *)&addr,
                                offsetof(struct sockaddr_un, sun_path) + 23) == 0);
        CHECK(netns_leave(back, &err) == 0 && own_netns() == home);
        netns_stock_give_back(&st, b);
        CHECK(st.n == 0);
        int c = netns_stock_take(&st, &err);
        CHECK(c >= 0 && inode_of(c) != a_inode && inode_of(c) != home);
        close(sock);

        netns_stock_give_back(&st, c);
        CHECK(st.n == 1);
        netns_stock_free(&st);
        CHECK(own_netns() == home);
        CHECK_DONE();
}
