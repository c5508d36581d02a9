/* The public header compiles alone. */
#include <simpletrace/trace.h>
