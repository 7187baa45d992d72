# Unit tests for the Kubernetes Lease backend's codecs and configuration (ha/k8s).
ifneq ($(and $(wildcard ha/module.mk),$(wildcard ha/k8s/ha_k8s.c)),)
$(eval $(call unit_test,unit/ha-k8s/test_ha_k8s,tests/unit/ha-k8s/test_ha_k8s.c,$(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a,$(HA_LIBS) $(MALLOC_LIBS)))
endif
