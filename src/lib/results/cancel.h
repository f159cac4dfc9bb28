/* The engine's side of codecell_cancel: the fd that becomes readable when it is triggered. */
#ifndef CODECELL_CANCEL_H
#define CODECELL_CANCEL_H

#include "codecell.h"

/* -1 for NULL. */
int cancel_fd(const codecell_cancel *cancel);

#endif
