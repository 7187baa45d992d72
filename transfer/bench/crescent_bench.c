/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-bench: benchmark tool with one subcommand per subsystem. Add a subcommand by adding
 * a row to the table below and its entry point to bench.h.
 */
#include "common/fmacros.h"

#include "transfer/bench/bench.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *help;
} subcommands[] = {
    {"transfer", bench_transfer_main, "transfer engine throughput and latency (shm, tcp, ...)"},
    {"store", bench_store_main, "store client put/get throughput and latency (needs a master)"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: crescent-bench <subcommand> [options]   (--help per subcommand)\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].help);
}

/* Dispatches to the subcommand named by argv[1]; exit status 2 on usage errors. */
int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "crescent-bench: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
