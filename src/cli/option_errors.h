/* The one line each verb prints for options it cannot take, saying which of the three it is:
 * an option no verb knows, an option without its value, or an argument left over. */
#ifndef CODECELL_CLI_OPTION_ERRORS_H
#define CODECELL_CLI_OPTION_ERRORS_H

/* What getopt_long refused (c: '?' or ':'; the optstring starts with "+:" so that a missing
 * value is told apart) in arg, the element optind was at before the call (a cluster "-xy" is
 * one element: optopt says which letter). Returns EXIT_USAGE. */
int option_refused(const char *who, int c, const char *arg);
/* An argument the verb has no place for. Returns EXIT_USAGE. */
int extra_argument(const char *who, const char *arg);

#endif
