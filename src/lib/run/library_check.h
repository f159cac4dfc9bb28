/* Which of a cell's libraries load, asked inside its own sandbox (run/ floor: uses the cell's
 * runs; included by cell.c only). The probe (spec/interpreter.h) finds candidates on the host
 * without running any of them: a library folder may hold code the guest wrote, which must
 * never run outside the sandbox. So whether each loads is asked here, by importing or
 * requiring it as the cell's code would, under the cell's walls and limits. */
#ifndef CODECELL_LIBRARY_CHECK_H
#define CODECELL_LIBRARY_CHECK_H

#include "cell.h"

/* Keeps in cell->plan.probe.libraries only what loads, and marks it checked. With a
 * hand-written list (config->listed_libraries) the list is made of those names instead
 * (each with the probe's text when it found the library: "numpy 1.24.2"), and a name that
 * does not load is an error that names it, its JSON path and the error it raised. Without
 * one, a candidate that does not load is left out, and a sandbox that cannot run at all
 * leaves the probe's list as it is (a cell that cannot run code has worse to say). Costs
 * one run of the cell, plus one per candidate that ends a run by a limit (at most
 * LIBRARY_CHECK_RUNS in all). */
#define LIBRARY_CHECK_RUNS 6
/* One check run's wall clock at most (the cell's timeout_ms when lower). */
#define LIBRARY_CHECK_RUN_MS 10000
int library_check(struct codecell_cell *cell, codecell_error *err);

#endif
