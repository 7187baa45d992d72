# tests/hak: the Kubernetes Lease election backend (ha/k8s) against the Lease API double
# tests/ha/k8s_lease_server.py: a backend-level driver and crescent-elect scenarios.
ifneq ($(and $(wildcard ha/module.mk),$(wildcard ha/k8s/ha_k8s.c)),)
HAK_DRIVER := $(BUILD)/tests/ha/k8s_driver

$(HAK_DRIVER): $(call objs,tests/ha/k8s_driver.c) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(shell pkg-config --libs hiredis libcurl jansson yaml-0.1) $(MALLOC_LIBS)

ALL_SRCS     += tests/ha/k8s_driver.c
all: $(HAK_DRIVER)
TEST_SCRIPTS += $(sort $(wildcard tests/ha/k8s_*.sh))
endif
