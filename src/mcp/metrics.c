#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "process_metrics.h"
#include "refusals.h"

#define N_STATUS (CODECELL_STATUS_SANDBOX_ERROR + 1)

/* Upper bounds of the latency buckets, in seconds (Prometheus convention). */
static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                 0.25,  0.5,    1,     2.5,  5,     10,   30};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct cell_metrics {
        unsigned long long runs[N_STATUS];
        unsigned long long bucket[N_BUCKETS]; /* cumulative when rendered, not when counted */
        unsigned long long count;
        double sum_seconds;
        unsigned long long connections[2]; /* through the egress proxy: made, refused */
};

struct metrics {
        pthread_mutex_t lock;
        size_t n;
        struct cell_metrics cells[];
};

struct metrics *metrics_new(size_t n_cells)
{
        struct metrics *m = calloc(1, sizeof(*m) + n_cells * sizeof(m->cells[0]));
        if (!m)
                return NULL;
        pthread_mutex_init(&m->lock, NULL);
        m->n = n_cells;
        return m;
}

void metrics_free(struct metrics *m)
{
        if (!m)
                return;
        pthread_mutex_destroy(&m->lock);
        free(m);
}

void metrics_record(struct metrics *m, size_t cell, codecell_status status, double duration_ms)
{
        if (!m || cell >= m->n || (unsigned)status >= N_STATUS)
                return;
        double s = duration_ms / 1000.0;
        pthread_mutex_lock(&m->lock);
        struct cell_metrics *c = &m->cells[cell];
        c->runs[status]++;
        c->count++;
        c->sum_seconds += s;
        for (size_t b = 0; b < N_BUCKETS; b++)
                if (s <= buckets[b]) {
                        c->bucket[b]++;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
}

void metrics_record_network(struct metrics *m, size_t cell, size_t made, size_t refused)
{
        if (!m || cell >= m->n)
                return;
        pthread_mutex_lock(&m->lock);
        m->cells[cell].connections[0] += made;
        m->cells[cell].connections[1] += refused;
        pthread_mutex_unlock(&m->lock);
}

char *metrics_render(struct metrics *m, codecell_cellset *cells, size_t clients, size_t runs)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        fputs("# HELP codecell_runs_total Runs finished, by cell and result status.\n"
              "# TYPE codecell_runs_total counter\n",
              f);
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n; i++)
                for (int s = 0; s < N_STATUS; s++)
                        fprintf(f, "codecell_runs_total{cell=\"%s\",status=\"%s\"} %llu\n",
                                codecell_cellset_name(cells, i),
                                codecell_status_name((codecell_status)s), m->cells[i].runs[s]);
        fputs("# HELP codecell_run_duration_seconds Time from the call to the result.\n"
              "# TYPE codecell_run_duration_seconds histogram\n",
              f);
        for (size_t i = 0; i < m->n; i++) {
                const char *name = codecell_cellset_name(cells, i);
                unsigned long long cumulative = 0;
                for (size_t b = 0; b < N_BUCKETS; b++) {
                        cumulative += m->cells[i].bucket[b];
                        fprintf(f,
                                "codecell_run_duration_seconds_bucket{cell=\"%s\",le=\"%g\"} "
                                "%llu\n",
                                name, buckets[b], cumulative);
                }
                fprintf(f, "codecell_run_duration_seconds_bucket{cell=\"%s\",le=\"+Inf\"} %llu\n",
                        name, m->cells[i].count);
                fprintf(f, "codecell_run_duration_seconds_sum{cell=\"%s\"} %.6f\n", name,
                        m->cells[i].sum_seconds);
                fprintf(f, "codecell_run_duration_seconds_count{cell=\"%s\"} %llu\n", name,
                        m->cells[i].count);
        }
        fputs("# HELP codecell_network_connections_total Connections through a network cell's "
              "egress proxy, by cell and outcome (docs/network.md).\n"
              "# TYPE codecell_network_connections_total counter\n",
              f);
        for (size_t i = 0; i < m->n; i++)
                for (int o = 0; o < 2; o++)
                        fprintf(f,
                                "codecell_network_connections_total{cell=\"%s\",outcome=\"%s\"} "
                                "%llu\n",
                                codecell_cellset_name(cells, i), o ? "refused" : "made",
                                m->cells[i].connections[o]);
        pthread_mutex_unlock(&m->lock);
        fputs("# HELP codecell_pool_ready Sandboxes standing by, by cell.\n"
              "# TYPE codecell_pool_ready gauge\n",
              f);
        codecell_cell_info info[64];
        size_t n = codecell_cellset_size(cells);
        for (size_t i = 0; i < n && i < 64; i++) {
                codecell_cell_info_get(codecell_cellset_cell(cells, i), &info[i]);
                fprintf(f, "codecell_pool_ready{cell=\"%s\"} %zu\n",
                        codecell_cellset_name(cells, i), info[i].pool_ready);
        }
        fputs("# HELP codecell_pool_size Sandboxes each cell's pool keeps standing by.\n"
              "# TYPE codecell_pool_size gauge\n",
              f);
        for (size_t i = 0; i < n && i < 64; i++)
                fprintf(f, "codecell_pool_size{cell=\"%s\"} %zu\n", codecell_cellset_name(cells, i),
                        info[i].pool_size);
        fputs("# HELP codecell_sessions_open Persistent code sessions open, by cell.\n"
              "# TYPE codecell_sessions_open gauge\n",
              f);
        for (size_t i = 0; i < n && i < 64; i++)
                fprintf(f, "codecell_sessions_open{cell=\"%s\"} %zu\n",
                        codecell_cellset_name(cells, i), info[i].sessions_open);
        fputs("# HELP codecell_tool_calls_total SB.call calls from the code, by cell.\n"
              "# TYPE codecell_tool_calls_total counter\n",
              f);
        for (size_t i = 0; i < n && i < 64; i++)
                fprintf(f, "codecell_tool_calls_total{cell=\"%s\"} %llu\n",
                        codecell_cellset_name(cells, i), (unsigned long long)info[i].tool_calls);
        fputs("# HELP codecell_tool_refusals_total SB.call calls refused before a tool ran "
              "(unknown name, over the per-run count, arguments too large), by cell.\n"
              "# TYPE codecell_tool_refusals_total counter\n",
              f);
        for (size_t i = 0; i < n && i < 64; i++)
                fprintf(f, "codecell_tool_refusals_total{cell=\"%s\"} %llu\n",
                        codecell_cellset_name(cells, i), (unsigned long long)info[i].tool_refusals);
        refusals_render(f);
        process_metrics_render(f);
        fprintf(f,
                "# HELP codecell_runs_in_progress Tool calls running now.\n"
                "# TYPE codecell_runs_in_progress gauge\n"
                "codecell_runs_in_progress %zu\n"
                "# HELP codecell_mcp_sessions MCP sessions (clients) connected now.\n"
                "# TYPE codecell_mcp_sessions gauge\n"
                "codecell_mcp_sessions %zu\n",
                runs, clients);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}
