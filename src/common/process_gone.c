/* Whether a process has ended (process_gone.h): kill(pid, 0), then /proc/PID/stat's state. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "process_gone.h"

/* Whether process pid has exited but is not reaped yet (Linux /proc; false when unknown). */
static bool is_zombie(uint32_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%lu/stat", (unsigned long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the program name may hold ')' itself: the state follows the last */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

bool st__process_gone(uint32_t pid)
{
    if (kill((pid_t)pid, 0) == 0)
        return is_zombie(pid);
    return errno == ESRCH; /* EPERM: it runs, as another user */
}
