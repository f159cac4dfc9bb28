/* The process figures of GET /metrics, named as Prometheus client libraries name them
 * (process_cpu_seconds_total, process_resident_memory_bytes, …), and codecell_build_info. */
#ifndef CODECELL_MCP_PROCESS_METRICS_H
#define CODECELL_MCP_PROCESS_METRICS_H

#include <stdio.h>

void process_metrics_render(FILE *f);

#endif
