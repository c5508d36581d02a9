/*
 * libFuzzer target for the spans: the pairing rules' parser and the engine
 * that turns records into spans (nesting per thread, keyed spans across a
 * process's threads), run by `simpletrace latency`'s analysis.
 *
 * The input is "RULES\nB" followed by a trace: RULES are pairing rules
 * separated by ';' (each checked, the valid ones used before the built-in
 * ones), B picks --by (thread, process, an argument, none), and the trace
 * is read in one pass with the catalog it declares. Every input must end
 * with figures or an error, never a crash, a hang or a span counted twice:
 * the spans measured plus those not measured can never exceed the begins.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RULES 8

/* Splits the rules of text (NUL-terminated, modified) into rules[]: the valid ones. */
static size_t parse_rules(char *text, const char **rules)
{
    size_t n = 0;
    char err[512];
    for (char *save = NULL, *r = strtok_r(text, ";", &save); r && n < MAX_RULES; r = strtok_r(NULL, ";", &save))
        if (st__export_check_pair(r, err, sizeof err) == 0)
            rules[n++] = r;
        else if (!err[0])
            abort(); /* a refusal must say why */
    return n;
}

static void check(const struct st__an_result *res)
{
    uint64_t begins = res->sum.calls;
    uint64_t seen = 0;
    for (size_t i = 0; i < res->nspans; i++) {
        const struct st__an_span *s = res->spans[i];
        seen += s->hist.count + s->unfinished + s->key_reused;
        if (s->hist.count && (s->hist.min > s->hist.max || st__hist_quantile(&s->hist, 0.5) < s->hist.min ||
                              st__hist_quantile(&s->hist, 0.5) > s->hist.max))
            abort();
    }
    if (seen > begins)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
    if (!nl || (size_t)(nl - data) + 2 > size)
        return 0;
    size_t rules_len = (size_t)(nl - data);
    char *text = malloc(rules_len + 1);
    if (!text)
        return 0;
    memcpy(text, data, rules_len);
    text[rules_len] = '\0';
    const char *rules[MAX_RULES];
    struct st__an_options o = {.pairs = rules, .slowest = 3, .trace_name = "fuzz"};
    o.npairs = parse_rules(text, rules);
    uint8_t by = nl[1];
    o.no_default_pairs = by & 0x80;
    o.by = (enum st__an_by)(by & 3);
    o.by_arg = "x";
    const uint8_t *trace = nl + 2;
    size_t trace_size = size - (size_t)(trace - data);

    struct st_reader_options ro = {.struct_size = sizeof ro, .buffer_size = 4096};
    struct st_reader *r = NULL;
    if (st_reader_open_memory(&r, trace, trace_size, "fuzz", NULL, &ro, NULL) == 0) {
        struct st__an_result *res = NULL;
        char err[1024];
        st__an_latency(r, &o, &res, err, sizeof err);
        if (res) {
            check(res);
            FILE *sink = fopen("/dev/null", "w");
            struct st__an_report rep = {.print_prefix = "simpletrace print fuzz", .title = "fuzz"};
            if (sink) {
                st__an_write_json(sink, res, &rep);
                st__an_write_text(sink, res, &rep);
                fclose(sink);
            }
        }
        st__an_result_free(res);
        st_reader_close(r);
    }
    free(text);
    return 0;
}
