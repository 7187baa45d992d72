# tests/store/: the libcrescent store API (client/store/) against a real crescent-master and
# forked peer clients over tcp, shm and fabric (tcp;ofi_rxm). The test links the shared
# library, as applications do. test_store_netns.sh: two hosts as network namespaces (root).
STORE_TEST_SRCS := tests/store/test_store.c tests/store/store_test_util.c
STORE_TEST_OBJS := $(call objs,$(STORE_TEST_SRCS))
ALL_SRCS += $(STORE_TEST_SRCS)
$(STORE_TEST_OBJS): MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)

$(BUILD)/tests/store/test_store: $(STORE_TEST_OBJS) $(BUILD)/lib/libcrescent.so \
                                 $(BUILD)/bin/crescent-master
	$(LINK) $(STORE_TEST_OBJS) -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent \
	    $(shell pkg-config --libs hiredis) -ldl $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_store
TEST_SCRIPTS += tests/store/test_bench_store.sh

# tests/store/test_keyspace.c: plain Redis commands on pool objects (one keyspace).
KEYSPACE_TEST_SRCS := tests/store/test_keyspace.c
KEYSPACE_TEST_OBJS := $(call objs,$(KEYSPACE_TEST_SRCS))
ALL_SRCS += $(KEYSPACE_TEST_SRCS)
$(KEYSPACE_TEST_OBJS): MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)

$(BUILD)/tests/store/test_keyspace: $(KEYSPACE_TEST_OBJS) $(call objs,tests/store/store_test_util.c) \
                                    $(BUILD)/lib/libcrescent.so $(BUILD)/bin/crescent-master
	$(LINK) $(KEYSPACE_TEST_OBJS) $(call objs,tests/store/store_test_util.c) -L$(BUILD)/lib \
	    -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent $(shell pkg-config --libs hiredis) -ldl \
	    $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_keyspace

# tests/store/test_embedded.c: the master's embedded segment as a pool segment.
EMBEDDED_TEST_SRCS := tests/store/test_embedded.c
EMBEDDED_TEST_OBJS := $(call objs,$(EMBEDDED_TEST_SRCS))
ALL_SRCS += $(EMBEDDED_TEST_SRCS)
$(EMBEDDED_TEST_OBJS): MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)

$(BUILD)/tests/store/test_embedded: $(EMBEDDED_TEST_OBJS) $(call objs,tests/store/store_test_util.c) \
                                    $(BUILD)/lib/libcrescent.so $(BUILD)/bin/crescent-master
	$(LINK) $(EMBEDDED_TEST_OBJS) $(call objs,tests/store/store_test_util.c) -L$(BUILD)/lib \
	    -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent $(shell pkg-config --libs hiredis) -ldl \
	    $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_embedded

# crescent-client daemons and dummy clients (test_daemon.c, helpers in daemon_test_util.c).
DAEMON_TEST_SRCS := tests/store/test_daemon.c tests/store/daemon_test_util.c
DAEMON_TEST_OBJS := $(call objs,$(DAEMON_TEST_SRCS)) $(call objs,tests/store/store_test_util.c)
ALL_SRCS += $(DAEMON_TEST_SRCS) tests/store/bench_daemon.c
$(call objs,$(DAEMON_TEST_SRCS) tests/store/bench_daemon.c): \
    MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)

$(BUILD)/tests/store/test_daemon: $(DAEMON_TEST_OBJS) $(BUILD)/lib/libcrescent.so \
                                  $(BUILD)/bin/crescent-master $(BUILD)/bin/crescent-client
	$(LINK) $(DAEMON_TEST_OBJS) -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent \
	    $(shell pkg-config --libs hiredis) -ldl $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_daemon

# crescent-client's admin HTTP server (test_daemon_http.c; needs promtool).
DHTTP_TEST_OBJS := $(call objs,tests/store/test_daemon_http.c tests/store/daemon_test_util.c \
                               tests/store/store_test_util.c)
ALL_SRCS += tests/store/test_daemon_http.c
$(call objs,tests/store/test_daemon_http.c): MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)

$(BUILD)/tests/store/test_daemon_http: $(DHTTP_TEST_OBJS) $(BUILD)/lib/libcrescent.so \
                                       $(BUILD)/bin/crescent-master $(BUILD)/bin/crescent-client
	$(LINK) $(DHTTP_TEST_OBJS) -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent \
	    $(shell pkg-config --libs hiredis) -ldl $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_daemon_http

# make bench-daemon: get_into / put_from of 1 MiB objects by a direct client and by dummy
# clients of a daemon (a figure, never a timed test; not part of make test).
BENCH_DAEMON_OBJS := $(call objs,tests/store/bench_daemon.c tests/store/daemon_test_util.c \
                                 tests/store/store_test_util.c)
$(BUILD)/tests/store/bench_daemon: $(BENCH_DAEMON_OBJS) $(BUILD)/lib/libcrescent.so \
                                   $(BUILD)/bin/crescent-master $(BUILD)/bin/crescent-client
	$(LINK) $(BENCH_DAEMON_OBJS) -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent \
	    $(shell pkg-config --libs hiredis) -ldl $(CRITERION_LIBS)
.PHONY: bench-daemon
bench-daemon: $(BUILD)/tests/store/bench_daemon
	@CRESCENT_BUILD=$(abspath $(BUILD)) $(BUILD)/tests/store/bench_daemon --jobs 1

TEST_SCRIPTS += tests/store/test_store_netns.sh

# The client SSD tier end to end (test_ssd.c): library stores and a daemon with
# ssd_offload_path against a master with enable_offload.
SSD_TEST_OBJS := $(call objs,tests/store/test_ssd.c tests/store/daemon_test_util.c \
                             tests/store/store_test_util.c)
ALL_SRCS += tests/store/test_ssd.c
$(call objs,tests/store/test_ssd.c): MOD_CFLAGS += $(shell pkg-config --cflags hiredis criterion)
$(BUILD)/tests/store/test_ssd: $(SSD_TEST_OBJS) $(BUILD)/lib/libcrescent.so \
                               $(BUILD)/bin/crescent-master $(BUILD)/bin/crescent-client
	$(LINK) $(SSD_TEST_OBJS) -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent \
	    $(shell pkg-config --libs hiredis) -ldl $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/store/test_ssd
