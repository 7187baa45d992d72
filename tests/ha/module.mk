# tests/ha/: leader-election tests. test_ha_fsm (Criterion) drives the pure state machine and
# the URI parser; test_ha_{redis,etcd}.sh run crescent-elect processes against a real
# redis-server / etcd (tests/ha/test_election.py); test_elect_cli.sh checks crescent-elect's
# command line, error messages and IPv6 backends. chaos.sh is not part of make test.
# The Kubernetes backend's tests bring their own fragment, tests/ha/k8s*.mk.

$(eval $(call unit_test,ha/test_ha_fsm,tests/ha/test_ha_fsm.c,$(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a,$(HA_LIBS) $(MALLOC_LIBS)))

TEST_SCRIPTS += tests/ha/test_ha_redis.sh tests/ha/test_ha_etcd.sh tests/ha/test_elect_cli.sh

include $(wildcard tests/ha/k8s*.mk)

# ha_api_probe: drives the library API (two electors in one process); run by test_election.py.
HA_PROBE := $(BUILD)/tests/ha/ha_api_probe
$(HA_PROBE): $(call objs,tests/ha/ha_api_probe.c) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(HA_LIBS) $(MALLOC_LIBS)
ALL_SRCS += tests/ha/ha_api_probe.c
all: $(HA_PROBE)
