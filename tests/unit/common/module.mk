# Unit tests for common/.
$(eval $(call unit_test,unit/common/test_cm_basic,tests/unit/common/test_cm_basic.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_ht,tests/unit/common/test_cm_ht.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_glob,tests/unit/common/test_cm_glob.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_util,tests/unit/common/test_cm_util.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_dec,tests/unit/common/test_cm_dec.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_net,tests/unit/common/test_cm_net.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_tlsf,tests/unit/common/test_cm_tlsf.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_config,tests/unit/common/test_cm_config.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_ev,tests/unit/common/test_cm_ev.c,$(BUILD)/lib/libcm.a,$(CM_EV_LIBS)))

# libFuzzer target for the config-file parser (built with clang directly, sanitizers on).
ifneq ($(shell command -v clang),)
FUZZ_CONFIG_SRCS := tests/fuzz/fuzz_config.c common/cm_config.c common/cm_glob.c \
                    common/cm_util.c common/cm_mem.c common/cm_log.c common/cm_time.c
$(BUILD)/fuzz/fuzz_config: $(FUZZ_CONFIG_SRCS)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined \
	    -o $@ $(FUZZ_CONFIG_SRCS) -pthread
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_config
endif
