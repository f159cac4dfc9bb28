/* The seccomp filter: compiled once per cell with libseccomp, loaded in every sandbox as the
 * last step of its entry (sandbox_entry.c: prog, a plain BPF program) without allocating (the
 * crun way). */
#ifndef CODECELL_SECCOMP_FILTER_H
#define CODECELL_SECCOMP_FILTER_H

#include <linux/filter.h>
#include <stdbool.h>

#include "codecell.h"

struct seccomp_program {
        struct sock_fprog prog; /* prog.filter is owned (malloc'd) */
};

/* subprocesses: allow fork, vfork and clone of processes (else only threads). */
int seccomp_program_compile(struct seccomp_program *ret, bool subprocesses, codecell_error *err);
/* The same; network also allows sockets of every family and connect (the jail's option). */
int seccomp_program_compile_network(struct seccomp_program *ret, bool subprocesses, bool network,
                                    codecell_error *err);
/* A network cell's (proxy_listener.h): of socket(), only AF_INET and AF_INET6 stream sockets
 * of protocol 0 or IPPROTO_TCP, and no AF_UNIX one (socketpair stays as in every cell), so
 * that connect, allowed, can reach a TCP address only, never a UNIX socket file. */
int seccomp_program_compile_tcp(struct seccomp_program *ret, bool subprocesses,
                                codecell_error *err);
void seccomp_program_free(struct seccomp_program *p);

#endif
