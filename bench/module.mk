# bench/: crescent-master vs redis-server (bench/bench-master.sh, docs/benchmarks.md).
#   make bench          SET/GET throughput, latency and server CPU per request, A/B rounds
#   make bench-memory   INFO used_memory after loading 1,000,000 keys of 64 B
# Tune with BENCH_ROUNDS, BENCH_SCALE, BENCH_MEMORY, BENCH_THREADS (see the script header).
.PHONY: bench bench-memory

bench: $(BINS)
	@CRESCENT_BUILD=$(BUILD) bench/bench-master.sh

bench-memory: $(BINS)
	@CRESCENT_BUILD=$(BUILD) bench/bench-master.sh --memory-only
