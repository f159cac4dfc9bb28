/* The host-tool calls of one session eval, as its journal keeps them (run/journal.h): every
 * call that reached a tool, in the order the guest made it, with the reply the guest got. In
 * replay the same record answers the calls instead of the tools: a call that differs from the
 * record's (name or arguments) stops the replay (docs/sessions.md, Parked sessions). */
#ifndef CODECELL_CALL_RECORD_H
#define CODECELL_CALL_RECORD_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct recorded_call {
        char *name, *args;
        /* The reply frame's text after its id (",\"ok\":true,…}"), NULL: never answered before
         * the eval ended. */
        char *reply_tail;
};

struct call_record {
        pthread_mutex_t lock; /* the workers answer calls at once */
        struct recorded_call *calls;
        size_t n, cap;
        size_t bytes;     /* of the names, arguments and replies kept */
        size_t max_bytes; /* over it, nothing more is kept and over is set */
        bool over;
        bool replaying; /* answer from calls[next…] instead of calling tools */
        size_t next;
        /* Why the replay stopped (a call the record does not have), "" while it matches. */
        char diverged[400];
};

void call_record_init(struct call_record *r, size_t max_bytes);
void call_record_free(struct call_record *r);
/* Notes a call about to go to its tool: its index for call_record_answer, or -1 when it is not
 * kept (out of memory or over max_bytes: over is then set). */
long call_record_note(struct call_record *r, const char *name, const char *args);
/* The reply the guest got for call index (the whole frame's text). */
void call_record_answer(struct call_record *r, long index, const char *reply);
/* A copy of what from holds (a fork of a session); -1 when out of memory (to is then to be
 * freed). Not while from's eval runs. */
int call_record_copy(struct call_record *to, const struct call_record *from);
/* In replay: the reply frame's text (with id) for the guest's next call, or NULL when the call
 * is not the one recorded next (why in r->diverged) or out of memory. */
char *call_record_replay(struct call_record *r, const json_t *id, const char *name,
                         const char *args);

#endif
