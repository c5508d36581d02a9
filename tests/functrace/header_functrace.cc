/* The public header compiles alone. */
#include <simpletrace/functrace.h>
