# bench/: crescent-master vs redis-server (bench/bench-master.sh, bench/bench-evict.sh,
# docs/benchmarks.md).
#   make bench          SET/GET throughput, latency and server CPU per request, A/B rounds;
#                       then bench-evict
#   make bench-evict    eviction-bound SET throughput at 1 M and 10 M resident keys (vs
#                       redis-server allkeys-lru), INFO memory before and after FLUSHALL
#   make bench-memory   INFO used_memory after loading 1,000,000 keys of 64 B
# Tune with BENCH_ROUNDS, BENCH_SCALE, BENCH_MEMORY, BENCH_THREADS, BENCH_EVICT_* (see the
# script headers).
.PHONY: bench bench-evict bench-memory

bench: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-master.sh
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-evict.sh

bench-evict: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-evict.sh

bench-memory: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-master.sh --memory-only

# Micro-benchmarks of common/ (cm_hash64, cm_ht, cm_tlsf): make bench-common.
.PHONY: bench-common
BENCH_COMMON_SRCS := bench/bench_common.c
ALL_SRCS += $(BENCH_COMMON_SRCS)
$(BUILD)/bench/bench_common: $(call objs,$(BENCH_COMMON_SRCS)) $(BUILD)/lib/libcm.a
	$(LINK) $^ $(MALLOC_LIBS)

bench-common: $(BUILD)/bench/bench_common
	@$(BUILD)/bench/bench_common

# Admin HTTP: /metrics scrape time with 1 M keys and RESP latency beside a scrape loop.
.PHONY: bench-metrics
bench-metrics: $(BINS)
	@bench/bench-metrics.sh $(abspath $(BUILD))

# The Python package's get_into against the C client (docs/python.md): make bench-python.
.PHONY: bench-python
bench-python: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-python.sh

# Distributed-store metadata: pipelined MC.GETREPLICAS vs redis GET, metadata bytes per object.
.PHONY: bench-mc
bench-mc: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-mc.sh
BENCH_MC_LOAD_SRCS := bench/bench_mc_load.c
ALL_SRCS += $(BENCH_MC_LOAD_SRCS)
$(BUILD)/bench/bench_mc_load: $(call objs,$(BENCH_MC_LOAD_SRCS))
	$(LINK) $^
bench-mc: $(BUILD)/bench/bench_mc_load

.PHONY: bench-snapshot
bench-snapshot: $(BINS)
	@bench/bench-snapshot.sh $(abspath $(BUILD))

# Distributed store against the raw transfer engine and redis-server (docs/benchmarks.md);
# BENCH_STORE_ARGS=--update-docs writes the table into docs/benchmarks.md.
.PHONY: bench-store
bench-store: $(BINS) $(BUILD)/bench/bench_mc_load
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-store.sh $(BENCH_STORE_ARGS)

# Pub/sub: PUBLISH to 100 subscribers, crescent-master vs redis-server in the same run.
.PHONY: bench-pubsub
bench-pubsub: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-pubsub.sh

# HA put throughput: metadata puts with and without --enable_ha + the Redis op-log
# (bench/bench-ha.sh, figures in docs/ha.md): make bench-ha.
.PHONY: bench-ha
bench-ha: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/bench-ha.sh

# HA recovery time: replay of a 100,000-entry op-log by a new leader (bench/bench_ha_replay.py):
# make bench-ha-replay.
.PHONY: bench-ha-replay
bench-ha-replay: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) python3 bench/bench_ha_replay.py 5 100000

# System calls and client instructions per object on the store's tcp path (strace, callgrind);
# BENCH_STORE_COST_ARGS: "syscalls", "instr" or both (default).
.PHONY: bench-store-cost
bench-store-cost: $(BINS)
	@CRESCENT_BUILD=$(abspath $(BUILD)) bench/store-cost.sh $(BENCH_STORE_COST_ARGS)
