/* codecell_version: the number of the library actually loaded, for a program that wants to know
 * whether the libcodecell.so.0 it runs against is the one it was built with. */
#include "codecell.h"

const char *codecell_version(void)
{
        return CODECELL_VERSION;
}
