#include "events/events.h"
