/* The engine's side of codecell_cancel: the fd that becomes readable when it is triggered. */
#ifndef CODECELL_CANCEL_H
#define CODECELL_CANCEL_H

#include "codecell.h"

/* -1 for NULL. */
int cancel_fd(const codecell_cancel *cancel);
/* How many interrupts were asked for so far (0 for NULL). */
unsigned cancel_interrupts(const codecell_cancel *cancel);
/* Makes the fd unreadable again until the next trigger or interrupt (the eventfd is
 * non-blocking). Read the trigger and the interrupts after it: both are set before the fd is
 * written. */
void cancel_drain(const codecell_cancel *cancel);

#endif
