/* The table of peers.h. A socket is shut down only under the lock, while its peer is in the
 * list: libmicrohttpd tells peers_remove a connection is closed before it closes the socket, so
 * the fd shut down is never a number already given to another file. */
#include <stdlib.h>
#include <sys/socket.h>

#include "peers.h"
#include "util.h"

void peers_init(struct peers *p, uint64_t header_timeout_ms, unsigned max_pending)
{
        *p = (struct peers){.header_timeout_ms = header_timeout_ms, .max_pending = max_pending};
        pthread_mutex_init(&p->lock, NULL);
}

void peers_destroy(struct peers *p)
{
        pthread_mutex_destroy(&p->lock);
}

static void unlink_peer(struct peers *p, struct peer *peer)
{
        if (!peer->pending)
                return;
        *(peer->prev ? &peer->prev->next : &p->head) = peer->next;
        *(peer->next ? &peer->next->prev : &p->tail) = peer->prev;
        peer->prev = peer->next = NULL;
        peer->pending = false;
        p->n_pending--;
}

/* Its connection thread reads end-of-file and closes the connection: the peer leaves through
 * peers_remove then. */
static void close_peer(struct peers *p, struct peer *peer)
{
        (void)shutdown(peer->fd, SHUT_RDWR);
        unlink_peer(p, peer);
        p->closed++;
}

struct peer *peers_add(struct peers *p, int fd)
{
        struct peer *peer = calloc(1, sizeof(*peer));
        if (!peer)
                return NULL;
        peer->fd = fd;
        peer->accepted_ms = now_ms();
        peer->pending = true;
        pthread_mutex_lock(&p->lock);
        if (p->max_pending && p->n_pending >= p->max_pending)
                close_peer(p, p->head);
        peer->prev = p->tail;
        *(p->tail ? &p->tail->next : &p->head) = peer;
        p->tail = peer;
        p->n_pending++;
        pthread_mutex_unlock(&p->lock);
        return peer;
}

void peers_trust(struct peers *p, struct peer *peer)
{
        pthread_mutex_lock(&p->lock);
        unlink_peer(p, peer);
        pthread_mutex_unlock(&p->lock);
}

void peers_remove(struct peers *p, struct peer *peer)
{
        if (!peer)
                return;
        pthread_mutex_lock(&p->lock);
        unlink_peer(p, peer);
        pthread_mutex_unlock(&p->lock);
        free(peer);
}

void peers_reap(struct peers *p)
{
        double deadline = now_ms() - (double)p->header_timeout_ms;
        pthread_mutex_lock(&p->lock);
        while (p->head && p->head->accepted_ms <= deadline)
                close_peer(p, p->head);
        pthread_mutex_unlock(&p->lock);
}
