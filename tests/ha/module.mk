# tests/ha/: leader-election tests. test_ha_fsm (Criterion) drives the pure state machine and
# the URI parser; test_ha_{redis,etcd}.sh run crescent-elect processes against a real
# redis-server / etcd (tests/ha/test_election.py); test_elect_cli.sh checks crescent-elect's
# command line, error messages and IPv6 backends. chaos.sh is not part of make test.
# The Kubernetes Lease backend (ha/k8s) is tested against the Lease API double
# tests/ha/k8s_lease_server.py: the backend alone through a driver (k8s_backend.sh) and
# crescent-elect scenarios (k8s_election.py); tests/ha/chaos.sh k8s uses tests/ha/k8s_env.sh.
# test_master_ha{,_etcd,_k8s}.sh run three crescent-master --enable_ha with each election backend
# and the op-log in a real redis-server or etcd (tests/ha/test_master_ha.py, docs/ha.md "HA
# master"); test_master_ha_plain.sh checks plain SET/GET/DEL/FLUSHALL across fail-overs with a
# real libcrescent segment (test_master_ha_plain.py, seg_owner.py); tests/ha/store_chaos.sh
# BACKEND SECONDS (not in make test) runs them under random kill -9 / SIGSTOP of the leader.
# test_master_ha_snapshot{,_etcd}.sh add snapshots (Redis catalog): trim of the op-log, restore
# of snapshot + tail, fallback from a corrupt snapshot (full recovery: --ha_hot_standby no).
# test_master_ha_hot.sh: hot standbys following the op-log across trims, rebuilding after a gap,
# promoted with only the tail replayed. test_oplog_stall.sh: a stopped op-log store holds
# replies, and no client expires meanwhile. test_oplog_hold.sh: a reply leaves only once its
# entry is stored, while the loop goes on serving other connections.

$(eval $(call unit_test,ha/test_ha_fsm,tests/ha/test_ha_fsm.c,$(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a,$(HA_LIBS) $(MALLOC_LIBS)))

TEST_SCRIPTS += tests/ha/test_ha_redis.sh tests/ha/test_ha_etcd.sh tests/ha/test_elect_cli.sh \
                tests/ha/test_master_ha.sh tests/ha/test_master_ha_etcd.sh \
                tests/ha/test_master_ha_plain.sh tests/ha/test_oplog_stall.sh \
                tests/ha/test_oplog_hold.sh \
                tests/ha/test_master_ha_snapshot.sh tests/ha/test_master_ha_snapshot_etcd.sh \
                tests/ha/test_master_ha_hot.sh

ifneq ($(wildcard ha/k8s/ha_k8s.c),)
HAK_DRIVER := $(BUILD)/tests/ha/k8s_driver
$(HAK_DRIVER): $(call objs,tests/ha/k8s_driver.c) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(HA_LIBS) $(MALLOC_LIBS)
ALL_SRCS     += tests/ha/k8s_driver.c
all: $(HAK_DRIVER)
TEST_SCRIPTS += tests/ha/k8s_backend.sh tests/ha/k8s_election.py tests/ha/test_master_ha_k8s.sh
endif

# ha_api_probe: drives the library API (two electors in one process); run by test_election.py.
HA_PROBE := $(BUILD)/tests/ha/ha_api_probe
$(HA_PROBE): $(call objs,tests/ha/ha_api_probe.c) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(HA_LIBS) $(MALLOC_LIBS)
ALL_SRCS += tests/ha/ha_api_probe.c
all: $(HA_PROBE)

# client_follow: an application on libcrescent.so whose master address is an election backend
# (redis://, etcd://, k8s://); run by test_client_follow.py from the test_master_ha*.sh scripts.
HA_FOLLOW := $(BUILD)/tests/ha/client_follow
$(HA_FOLLOW): $(call objs,tests/ha/client_follow.c) $(BUILD)/lib/libcrescent.so
	$(LINK) $(call objs,tests/ha/client_follow.c) -L$(BUILD)/lib \
	    -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent
ALL_SRCS += tests/ha/client_follow.c
all: $(HA_FOLLOW)
