/* Helpers the C benchmarks share: a monotonic clock and sorting for medians. */
#ifndef CODECELL_BENCH_H
#define CODECELL_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* The p-quantile (0..1) of n values; sorts them. */
static inline double percentile(double *v, size_t n, double p)
{
        qsort(v, n, sizeof(*v), cmp_double);
        size_t i = (size_t)(p * (double)(n - 1) + 0.5);
        return v[i < n ? i : n - 1];
}

#endif
