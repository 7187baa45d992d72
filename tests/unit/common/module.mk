# Unit tests for common/.
$(eval $(call unit_test,unit/common/test_cm_basic,tests/unit/common/test_cm_basic.c,$(BUILD)/lib/libcm.a,))
