#include <simpletrace/reader.h>
