# Unit tests for server/pool/ (the store's pool metadata core): scenario tests per rule and a
# randomized model test.
POOL_TEST_LIBS := $(BUILD)/lib/libpool.a $(BUILD)/lib/libsto.a $(BUILD)/lib/libcm.a
$(eval $(call unit_test,unit/pool/test_pool_seg,tests/unit/pool/test_pool_seg.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_obj,tests/unit/pool/test_pool_obj.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_events,tests/unit/pool/test_pool_events.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_evict,tests/unit/pool/test_pool_evict.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_model,tests/unit/pool/test_pool_model.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_snap,tests/unit/pool/test_pool_snap.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_redis,tests/unit/pool/test_pool_redis.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_offload,tests/unit/pool/test_pool_offload.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_restore,tests/unit/pool/test_pool_restore.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_shared,tests/unit/pool/test_pool_shared.c,$(POOL_TEST_LIBS),-lm))

# make bench-pool-memory: metadata bytes per object under the master's allocator.
.PHONY: bench-pool-memory
ALL_SRCS += tests/unit/pool/pool_memory.c
$(BUILD)/tests/unit/pool/pool_memory: $(call objs,tests/unit/pool/pool_memory.c) $(POOL_TEST_LIBS)
	$(LINK) $^ $(MALLOC_LIBS) -lm

bench-pool-memory: $(BUILD)/tests/unit/pool/pool_memory
	@$(BUILD)/tests/unit/pool/pool_memory

# make fuzz: the snapshot loader (pool_snap.c) under libFuzzer.
FUZZ_POOL_SRCS := tests/fuzz/fuzz_pool_snap.c $(POOL_SRCS) storage/sto_record.c common/cm_tlsf.c \
                  common/cm_ht.c common/cm_hash.c common/cm_mem.c common/cm_errno.c common/cm_log.c \
                  common/cm_glob.c common/cm_time.c
$(BUILD)/fuzz/fuzz_pool_snap: $(FUZZ_POOL_SRCS) server/pool/pool.h server/pool/pool_int.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -pthread -lm

FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_pool_snap
