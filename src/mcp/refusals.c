#include "refusals.h"

#include <stdatomic.h>

#include "oplog.h"

static const char *const names[REFUSAL__COUNT] = {"unauthorized", "forbidden", "too_large", "busy",
                                                  "bad_request"};
static atomic_ullong counts[REFUSAL__COUNT];

void refusal_note(enum refusal reason, const char *why)
{
        if ((unsigned)reason >= REFUSAL__COUNT)
                reason = REFUSAL_BAD_REQUEST;
        atomic_fetch_add(&counts[reason], 1);
        oplog_event(OPLOG_INFO, "refused",
                    json_pack("{s:s, s:s?}", "reason", names[reason], "why", why));
}

enum refusal refusal_of_http_status(unsigned status)
{
        switch (status) {
        case 401:
                return REFUSAL_UNAUTHORIZED;
        case 403:
                return REFUSAL_FORBIDDEN;
        case 413:
                return REFUSAL_TOO_LARGE;
        case 429:
        case 503:
                return REFUSAL_BUSY;
        default:
                return REFUSAL_BAD_REQUEST;
        }
}

void refusals_render(FILE *f)
{
        fputs("# HELP codecell_refusals_total Requests turned away before any code ran, by "
              "reason.\n"
              "# TYPE codecell_refusals_total counter\n",
              f);
        for (int i = 0; i < REFUSAL__COUNT; i++)
                fprintf(f, "codecell_refusals_total{reason=\"%s\"} %llu\n", names[i],
                        (unsigned long long)atomic_load(&counts[i]));
}
