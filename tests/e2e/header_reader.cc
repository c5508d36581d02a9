/* The public header compiles alone. */
#include <simpletrace/reader.h>
