/* SPDX-License-Identifier: Apache-2.0 */
/* crescent-bench subcommands: each takes the arguments after its name (argv[0] = name). */
#ifndef CRESCENT_TRANSFER_BENCH_BENCH_H
#define CRESCENT_TRANSFER_BENCH_BENCH_H

/*
 * `crescent-bench transfer`: transfer engine throughput/latency benchmark (target or
 * initiator). Returns the process exit status.
 */
int bench_transfer_main(int argc, char **argv);

/*
 * `crescent-bench store`: store client benchmark (put_from / get_into against crescent-master,
 * or `--operation serve` to contribute a segment). Returns the process exit status.
 */
int bench_store_main(int argc, char **argv);

#endif
