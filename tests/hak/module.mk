# tests/hak: the Kubernetes Lease election backend (ha/k8s) against the Lease API double
# tests/ha/k8s_lease_server.py: the backend alone through a driver (k8s_backend.sh) and
# crescent-elect scenarios (k8s_election.py). tests/ha/chaos.sh k8s uses tests/ha/k8s_env.sh.
ifneq ($(and $(wildcard ha/module.mk),$(wildcard ha/k8s/ha_k8s.c)),)
HAK_DRIVER := $(BUILD)/tests/ha/k8s_driver

$(HAK_DRIVER): $(call objs,tests/ha/k8s_driver.c) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(shell pkg-config --libs hiredis libcurl jansson yaml-0.1) $(MALLOC_LIBS)

ALL_SRCS     += tests/ha/k8s_driver.c
all: $(HAK_DRIVER)
TEST_SCRIPTS += tests/ha/k8s_backend.sh tests/ha/k8s_election.py
endif
