/* A cancellation token: an eventfd that the engine polls beside the sandbox's pipes, so a
 * cancelled run stops at once rather than at its next check. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cancel.h"
#include "error.h"

struct codecell_cancel {
        int fd;
        atomic_bool triggered;
        atomic_uint interrupts; /* codecell_cancel_interrupt() calls so far */
};

codecell_cancel *codecell_cancel_new(codecell_error *err)
{
        codecell_cancel *c = calloc(1, sizeof(*c));
        if (!c) {
                (void)err_sys(err, ENOMEM, "cancel");
                return NULL;
        }
        c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->fd < 0) {
                (void)err_sys(err, errno, "cancel: eventfd");
                free(c);
                return NULL;
        }
        atomic_init(&c->triggered, false);
        atomic_init(&c->interrupts, 0);
        return c;
}

void codecell_cancel_trigger(codecell_cancel *cancel)
{
        if (!cancel || atomic_exchange(&cancel->triggered, true))
                return;
        uint64_t one = 1;
        (void)!write(cancel->fd, &one, sizeof(one));
}

/* Only a lock-free atomic and write(2): both are async-signal-safe. */
void codecell_cancel_interrupt(codecell_cancel *cancel)
{
        if (!cancel || atomic_load(&cancel->triggered))
                return;
        atomic_fetch_add(&cancel->interrupts, 1);
        uint64_t one = 1;
        (void)!write(cancel->fd, &one, sizeof(one));
}

bool codecell_cancel_triggered(const codecell_cancel *cancel)
{
        return cancel && atomic_load(&((codecell_cancel *)cancel)->triggered);
}

void codecell_cancel_free(codecell_cancel *cancel)
{
        if (!cancel)
                return;
        close(cancel->fd);
        free(cancel);
}

int cancel_fd(const codecell_cancel *cancel)
{
        return cancel ? cancel->fd : -1;
}

unsigned cancel_interrupts(const codecell_cancel *cancel)
{
        return cancel ? atomic_load(&((codecell_cancel *)cancel)->interrupts) : 0;
}

void cancel_drain(const codecell_cancel *cancel)
{
        uint64_t count;
        if (!cancel)
                return;
        (void)!read(cancel->fd, &count, sizeof(count));
        /* A triggered token stays readable: another run polling the same token must see it
         * too, and codecell_cancel_trigger() writes only once. */
        if (atomic_load(&((codecell_cancel *)cancel)->triggered)) {
                uint64_t one = 1;
                (void)!write(cancel->fd, &one, sizeof(one));
        }
}
