# tests/: every sub-suite brings its own module.mk (unit/<module>, integration, compat, ha, ...).
include $(sort $(wildcard tests/*/module.mk tests/unit/*/module.mk))

# The network-path suites that `make test` runs a second time on the epoll backend (the first
# pass uses the default, io_uring where the kernel allows it): integration, stress, and the
# compat scripts that exercise the wire (raw protocol, redis-benchmark).
NET_TEST_PROGS   = $(filter $(BUILD)/tests/integration/%,$(TEST_PROGS))
NET_TEST_SCRIPTS = $(filter tests/stress/% tests/compat/protocol.sh tests/compat/pubsub.sh tests/compat/redis_benchmark.sh,$(TEST_SCRIPTS))
