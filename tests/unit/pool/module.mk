# Unit tests for server/pool/ (the store's pool metadata core): scenario tests per rule and a
# randomized model test.
POOL_TEST_LIBS := $(BUILD)/lib/libpool.a $(BUILD)/lib/libcm.a
$(eval $(call unit_test,unit/pool/test_pool_seg,tests/unit/pool/test_pool_seg.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_obj,tests/unit/pool/test_pool_obj.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_evict,tests/unit/pool/test_pool_evict.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_model,tests/unit/pool/test_pool_model.c,$(POOL_TEST_LIBS),-lm))
$(eval $(call unit_test,unit/pool/test_pool_restore,tests/unit/pool/test_pool_restore.c,$(POOL_TEST_LIBS),-lm))

# make bench-pool-memory: metadata bytes per object under the master's allocator.
.PHONY: bench-pool-memory
ALL_SRCS += tests/unit/pool/pool_memory.c
$(BUILD)/tests/unit/pool/pool_memory: $(call objs,tests/unit/pool/pool_memory.c) $(POOL_TEST_LIBS)
	$(LINK) $^ $(MALLOC_LIBS) -lm

bench-pool-memory: $(BUILD)/tests/unit/pool/pool_memory
	@$(BUILD)/tests/unit/pool/pool_memory
