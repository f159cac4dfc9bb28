/* Counters for GET /metrics (Prometheus text format): runs by cell and status, a latency
 * histogram per cell, and gauges read from the cells when asked. */
#ifndef CODECELL_MCP_METRICS_H
#define CODECELL_MCP_METRICS_H

#include <stddef.h>

#include "codecell.h"

struct metrics;

struct metrics *metrics_new(size_t n_cells);
void metrics_free(struct metrics *m);
void metrics_record(struct metrics *m, size_t cell, codecell_status status, double duration_ms);
/* A run's connections through the cell's egress proxy: those made, and those refused. */
void metrics_record_network(struct metrics *m, size_t cell, size_t made, size_t refused);
/* The exposition text; clients and runs are the server's own gauges. Caller frees. */
char *metrics_render(struct metrics *m, codecell_cellset *cells, size_t clients, size_t runs);

#endif
