# Unit tests for storage/ (the SSD tier): API round trips per backend and I/O path, recovery,
# corruption, quotas and eviction, configuration and path rules, concurrent callers, the offset
# layout's journal under concurrent writers and compactions, the quota and key limit under
# overwrites and concurrent puts, durable file replacement (syncs around renames, failing syncs).
STO_TEST_HELPERS := tests/unit/storage/sto_test.c
$(eval $(call unit_test,unit/storage/test_sto_api,tests/unit/storage/test_sto_api.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_config,tests/unit/storage/test_sto_config.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_recovery,tests/unit/storage/test_sto_recovery.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_concurrency,tests/unit/storage/test_sto_concurrency.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_journal,tests/unit/storage/test_sto_journal.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_quota,tests/unit/storage/test_sto_quota.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
# Durable file replacement: fsync and fdatasync are wrapped at link time to make them fail.
STO_WRAP_SYNC := -Wl,--wrap=fsync -Wl,--wrap=fdatasync
$(eval $(call unit_test,unit/storage/test_sto_durable,tests/unit/storage/test_sto_durable.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS) $(STO_WRAP_SYNC)))

# libFuzzer target for the on-disk record and index-entry decoders (make fuzz).
ifneq ($(shell command -v clang),)
FUZZ_STO_SRCS := tests/fuzz/fuzz_sto_record.c storage/sto_record.c common/cm_errno.c
$(BUILD)/fuzz/fuzz_sto_record: $(FUZZ_STO_SRCS) storage/sto_record.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined \
	    -o $@ $(FUZZ_STO_SRCS) -pthread
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_sto_record
endif

# make bench-storage: storage/ beside fio on the same file system (bench/bench-storage.sh).
.PHONY: bench-storage
ALL_SRCS += bench/bench_storage.c
$(BUILD)/bench/sto-bench: $(call objs,bench/bench_storage.c) $(STO_LIBS)
	$(LINK) $^ $(STO_LDLIBS)

bench-storage: $(BUILD)/bench/sto-bench $(BUILD)/bin/crescent-master
	@bench/bench-storage.sh $(abspath $(BUILD))
