/* SPDX-License-Identifier: Apache-2.0 */
/* crescent-bench: benchmark tool, one subcommand per subsystem (placeholder). */
#include "common/fmacros.h"

#include <stdio.h>

int main(int argc, char **argv) {
    (void)argv;
    fprintf(stderr, "usage: crescent-bench transfer [options]\n");
    return argc > 1 ? 0 : 2;
}
