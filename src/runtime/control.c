#include <simpletrace/simpletrace.h>
