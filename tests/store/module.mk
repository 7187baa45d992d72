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
TEST_SCRIPTS += tests/store/test_store_netns.sh
