/* The public header compiles alone. */
#include <simpletrace/simpletrace.h>
