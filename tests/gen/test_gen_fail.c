/*
 * The failing-input corpus (barectf style): tests/gen/fail/RULE.trace-events
 * breaks one grammar rule; RULE.expected is the exact stderr of
 * `simpletrace gen` on it. RULE.second.trace-events, when present, is given
 * as a second input (rules about several files). Each case must exit 1,
 * print exactly the expected message, starting "simpletrace gen: " as
 * every message of the command does, and create no output file. A trace
 * file given in place of the trace-events file is one of the rules.
 *
 * To add a rule: write RULE.trace-events, then RULE.expected by hand (or from
 * `cd tests/gen/fail && simpletrace gen --format=h RULE.trace-events 2>RULE.expected`,
 * checked by eye).
 *
 * usage: test_gen_fail SIMPLETRACE FAIL-DIR
 */
#include <dirent.h>

#include "gen_util.h"
#include "tap.h"

static const char suffix[] = ".expected";

/* Runs one rule; the input paths are relative to dir, as the messages show them. */
static void run_rule(const char *exe, const char *dir, const char *rule, const char *scratch)
{
    char input[1024], second[1024], expected_path[4096], out[4096];
    snprintf(input, sizeof input, "%s.trace-events", rule);
    snprintf(second, sizeof second, "%s.second.trace-events", rule);
    snprintf(expected_path, sizeof expected_path, "%s/%s%s", dir, rule, suffix);
    snprintf(out, sizeof out, "%s/out.h", scratch);
    char second_path[4096];
    snprintf(second_path, sizeof second_path, "%s/%s", dir, second);
    char *argv[] = {(char *)exe, "gen", "--format=h", "--backends=simple,log", "-o", out, input,
                    gu_exists(second_path) ? second : NULL, NULL};
    char *expected = tu_slurp(expected_path, NULL);
    struct tu_run r;
    gu_run(argv, dir, &r);
    is_int(r.status, 1, "%s: exit status 1", rule);
    is_str(r.err, expected, "%s: message", rule);
    ok(r.err && !strncmp(r.err, "simpletrace gen: ", 17), "%s: the message starts with 'simpletrace gen: '", rule);
    ok(gu_count_entries(scratch) == 0, "%s: no output file left", rule);
    tu_run_free(&r);
    free(expected);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIMPLETRACE FAIL-DIR\n", argv[0]);
        return 2;
    }
    char *exe = gu_abspath(argv[1]);
    char *scratch = gu_mkdtemp();
    DIR *d = opendir(argv[2]);
    ok(d != NULL && scratch != NULL, "corpus %s opens", argv[2]);
    int rules = 0, inputs = 0;
    struct dirent *de;
    while (d && scratch && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strstr(de->d_name, ".trace-events") && !strstr(de->d_name, ".second."))
            inputs++;
        if (n <= sizeof suffix - 1 || strcmp(de->d_name + n - (sizeof suffix - 1), suffix) != 0)
            continue;
        char rule[1024];
        snprintf(rule, sizeof rule, "%.*s", (int)(n - (sizeof suffix - 1)), de->d_name);
        run_rule(exe, argv[2], rule, scratch);
        rules++;
    }
    if (d)
        closedir(d);
    ok(rules >= 30, "the corpus has a case per rule (%d)", rules);
    is_int(inputs, rules, "every input has its .expected message");
    if (scratch)
        gu_rm_rf(scratch);
    free(scratch);
    free(exe);
    return done_testing();
}
