#include "egress_local.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* One RTM_GETROUTE for the address, as `ip route get` asks: the kernel's answer names the route
 * a connect would take, and its type is RTN_LOCAL exactly when the address is this host's. The
 * routing table, not a list of interface addresses read once, so an address added later counts
 * and nothing is cached. */
const char *egress_address_local(const struct sockaddr *sa)
{
        unsigned char addr[16];
        size_t len;
        int family;
        if (sa->sa_family == AF_INET) {
                memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
                len = 4, family = AF_INET;
        } else if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
                if (IN6_IS_ADDR_V4MAPPED(a6)) { /* connected to as the IPv4 address */
                        memcpy(addr, a6->s6_addr + 12, 4);
                        len = 4, family = AF_INET;
                } else {
                        memcpy(addr, a6->s6_addr, 16);
                        len = 16, family = AF_INET6;
                }
        } else {
                return "not an IP address";
        }

        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                char attrs[RTA_SPACE(16)];
        } req;
        memset(&req, 0, sizeof(req));
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.nh.nlmsg_type = RTM_GETROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST;
        req.nh.nlmsg_seq = 1;
        req.rt.rtm_family = (unsigned char)family;
        req.rt.rtm_dst_len = (unsigned char)(len * 8);
        struct rtattr *rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
        rta->rta_type = RTA_DST;
        rta->rta_len = (unsigned short)RTA_LENGTH(len);
        memcpy(RTA_DATA(rta), addr, len);
        req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);

        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return "cannot ask the routing table whether it is this host's own";
        /* The kernel answers at once; the timeout only bounds a kernel that would not. */
        struct timeval tv = {.tv_sec = 5};
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        union {
                struct nlmsghdr nh;
                char buf[8192];
        } ans;
        ssize_t n = -1;
        if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
            (ssize_t)req.nh.nlmsg_len) {
                do
                        n = recv(fd, ans.buf, sizeof(ans.buf), 0);
                while (n < 0 && errno == EINTR);
        }
        close(fd);
        if (n < (ssize_t)sizeof(struct nlmsghdr) || !NLMSG_OK(&ans.nh, (size_t)n))
                return "cannot ask the routing table whether it is this host's own";
        if (ans.nh.nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(&ans.nh);
                /* No route at all (unreachable, prohibited): not this host's, and the connect
                 * will fail on its own. */
                if (e->error == -ENETUNREACH || e->error == -EHOSTUNREACH || e->error == -EACCES ||
                    e->error == -EINVAL)
                        return NULL;
                return "cannot ask the routing table whether it is this host's own";
        }
        if (ans.nh.nlmsg_type != RTM_NEWROUTE ||
            ans.nh.nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
                return "cannot ask the routing table whether it is this host's own";
        const struct rtmsg *rt = NLMSG_DATA(&ans.nh);
        return rt->rtm_type == RTN_LOCAL ? "this host's own address" : NULL;
}
