# Unit tests for common/.
$(eval $(call unit_test,unit/common/test_cm_basic,tests/unit/common/test_cm_basic.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_ht,tests/unit/common/test_cm_ht.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_glob,tests/unit/common/test_cm_glob.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_util,tests/unit/common/test_cm_util.c,$(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/common/test_cm_tlsf,tests/unit/common/test_cm_tlsf.c,$(BUILD)/lib/libcm.a,))
