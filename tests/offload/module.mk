# tests/offload/: the single-process master with the SSD tier (--enable_offload, docs/storage.md).
# test_offload is a Criterion binary on the integration harness (hiredis, real processes, 4 MiB
# --memory, a data set four times that); offload_cli.sh drives the same setup with redis-cli,
# redis-benchmark and /metrics, and checks the start-up errors.
# test_offload_wq: the background write queue of eviction (queued writes read, changed,
# cancelled, failing, bounded, and waited for at shutdown; writes in progress read, changed and
# waited for, across restarts).
# offload_util.c: the set-up the Criterion binaries share (a master on a temporary tier).
OFF_UTIL_OBJS := $(call objs,tests/offload/offload_util.c)
ALL_SRCS += tests/offload/offload_util.c
$(OFF_UTIL_OBJS): MOD_CFLAGS += $(IT_CFLAGS)
$(call objs,tests/offload/test_offload.c): MOD_CFLAGS += $(IT_CFLAGS)
$(eval $(call unit_test,offload/test_offload,tests/offload/test_offload.c,$(call objs,$(IT_HARNESS_SRCS)) $(OFF_UTIL_OBJS),$(IT_LIBS)))
TEST_SCRIPTS += tests/offload/offload_cli.sh
$(call objs,tests/offload/test_offload_defer.c): MOD_CFLAGS += $(IT_CFLAGS)
$(eval $(call unit_test,offload/test_offload_defer,tests/offload/test_offload_defer.c,$(call objs,$(IT_HARNESS_SRCS)) $(OFF_UTIL_OBJS),$(IT_LIBS)))
$(call objs,tests/offload/test_offload_wq.c): MOD_CFLAGS += $(IT_CFLAGS)
$(eval $(call unit_test,offload/test_offload_wq,tests/offload/test_offload_wq.c,$(call objs,$(IT_HARNESS_SRCS)) $(OFF_UTIL_OBJS),$(IT_LIBS)))
