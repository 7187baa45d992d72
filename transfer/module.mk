# transfer/: transfer engine library (prefix xfer_), its transports, crescent-bench, and the
# libcrescent shared/static library (transfer + common objects for now).
#
# Every transfer/core/*.c is compiled (including xfb's xfer_cuda*.c / xfer_pinned*.c), plus
# transfer/efa/*.c when libfabric is found and transfer/verbs/*.c when libibverbs is found;
# those set XFER_HAVE_FABRIC / XFER_HAVE_VERBS for transfer/core/xfer_registry.c.

XFER_HAVE_FABRIC := $(shell pkg-config --exists libfabric 2>/dev/null && echo 1)
XFER_HAVE_VERBS  := $(shell pkg-config --exists libibverbs 2>/dev/null && \
                      test -f /usr/include/infiniband/verbs.h && echo 1)

XFER_SRCS := $(sort $(wildcard transfer/core/*.c transfer/tcp/*.c transfer/shm/*.c \
                               transfer/fault/*.c))
XFER_DEFS :=
XFER_LIBS :=
ifeq ($(XFER_HAVE_FABRIC),1)
XFER_SRCS += $(sort $(wildcard transfer/efa/*.c))
XFER_DEFS += -DXFER_HAVE_FABRIC $(shell pkg-config --cflags libfabric)
XFER_LIBS += $(shell pkg-config --libs libfabric)
endif
ifeq ($(XFER_HAVE_VERBS),1)
XFER_SRCS += $(sort $(wildcard transfer/verbs/*.c))
XFER_DEFS += -DXFER_HAVE_VERBS $(shell pkg-config --cflags libibverbs)
XFER_LIBS += $(shell pkg-config --libs libibverbs)
endif
# xfer_cuda.c (xfb) provides xfer__mem_location; the default in xfer_memloc.c then compiles out.
ifneq ($(wildcard transfer/core/xfer_cuda.c),)
XFER_DEFS += -DXFER_HAVE_CUDA_MEMLOC
endif
# CUDA headers only: xfer_cuda.c loads libcudart with dlopen, so nothing links against it.
ifeq ($(HAVE_CUDA),1)
XFER_DEFS += -DXFER_HAVE_CUDA -I$(CUDA_HOME)/include
endif
XFER_LIBS += -ldl

XFER_OBJS := $(call objs,$(XFER_SRCS))
ALL_SRCS  += $(XFER_SRCS)
LIBS_OUT  += $(BUILD)/lib/libxfer.a

# Rebuild the transfer objects when the optional-transport set changes (the global flags stamp
# does not see module flags).
XFER_FLAGS_STAMP := $(BUILD)/.xfer-flags
ifneq ($(shell cat $(XFER_FLAGS_STAMP) 2>/dev/null),$(strip $(XFER_DEFS)))
$(shell mkdir -p $(BUILD); echo '$(strip $(XFER_DEFS))' > $(XFER_FLAGS_STAMP))
endif
$(XFER_OBJS): $(XFER_FLAGS_STAMP)

# The exported libcrescent API is the only default-visibility code (CRESCENT_API).
$(XFER_OBJS): MOD_CFLAGS += $(XFER_DEFS) -fvisibility=hidden

$(BUILD)/lib/libxfer.a: $(XFER_OBJS)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

# ---- libcrescent: transfer + store client + common objects, soname libcrescent.so.0 ----
# The store client (client/store/, prefix cli_, public crescent_store_*) talks to the master
# with hiredis.
CLI_STORE_SRCS := $(sort $(wildcard client/store/*.c))
CLI_STORE_OBJS := $(call objs,$(CLI_STORE_SRCS))
# The SSD tier of a real client (client/store/cli_ssd.c) uses storage/ (libsto); the leader view
# of the HA master address forms (client/store/cli_leader.c) uses ha/ (libha.a, whose objects
# stay local to libcrescent.so through client/libcrescent.map).
CLI_HA_LIB     := $(BUILD)/lib/libha.a
CLI_STORE_LIBS := $(shell pkg-config --libs hiredis liburing libcurl jansson yaml-0.1) -lpthread
CLI_STO_OBJS   := $(call objs,$(wildcard storage/*.c))
ALL_SRCS += $(CLI_STORE_SRCS)
$(CLI_STORE_OBJS): MOD_CFLAGS += -fvisibility=hidden $(shell pkg-config --cflags hiredis)
CRESCENT_SO_OBJS := $(XFER_OBJS) $(CLI_STORE_OBJS) $(CLI_STO_OBJS) $(COMMON_OBJS)
LIBS_OUT += $(BUILD)/lib/libcrescent.so $(BUILD)/lib/libcrescent.a

$(BUILD)/lib/libcrescent.so.0: $(CRESCENT_SO_OBJS) $(CLI_HA_LIB) client/libcrescent.map
	$(LINK) -shared -Wl,-soname,libcrescent.so.0 -Wl,--version-script=client/libcrescent.map \
	    -Wl,-z,defs $(CRESCENT_SO_OBJS) $(CLI_HA_LIB) $(XFER_LIBS) $(CLI_STORE_LIBS)

$(BUILD)/lib/libcrescent.so: $(BUILD)/lib/libcrescent.so.0
	@ln -sf libcrescent.so.0 $@

# The static library carries the ha/ objects too (HA_OBJS, from ha/module.mk at recipe time).
$(BUILD)/lib/libcrescent.a: $(CRESCENT_SO_OBJS) $(CLI_HA_LIB)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $(CRESCENT_SO_OBJS) $(HA_OBJS)

# ---- crescent-client: the standalone real client daemon (client/daemon/, prefix cli_d_) ----
# Linked with the store client objects (not the shared library): it uses their internals for
# MC.GRACEFULUNMOUNT; redis-compat's RESP parser reads the dummy requests; libmicrohttpd serves
# the admin HTTP server (--enable_http_server).
CLI_D_SRCS := $(sort $(wildcard client/daemon/*.c))
ALL_SRCS   += $(CLI_D_SRCS)
BINS       += $(BUILD)/bin/crescent-client
$(call objs,$(CLI_D_SRCS)): MOD_CFLAGS += $(shell pkg-config --cflags hiredis libmicrohttpd)

$(BUILD)/bin/crescent-client: $(call objs,$(CLI_D_SRCS)) $(CLI_STORE_OBJS) $(CLI_HA_LIB) \
                              $(BUILD)/lib/libxfer.a $(RC_LIB) $(BUILD)/lib/libsto.a \
                              $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS) $(CLI_STORE_LIBS) $(shell pkg-config --libs libmicrohttpd) \
	    $(MALLOC_LIBS)

# ---- crescent-bench: subcommand dispatcher (transfer/bench/) ----
XFER_BENCH_SRCS := $(sort $(wildcard transfer/bench/*.c))
ALL_SRCS += $(XFER_BENCH_SRCS)
BINS     += $(BUILD)/bin/crescent-bench
$(call objs,$(XFER_BENCH_SRCS)): MOD_CFLAGS += $(XFER_DEFS)

$(BUILD)/bin/crescent-bench: $(call objs,$(XFER_BENCH_SRCS)) $(CLI_STORE_OBJS) $(CLI_HA_LIB) \
                             $(BUILD)/lib/libxfer.a $(BUILD)/lib/libsto.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS) $(CLI_STORE_LIBS) -lm

.PHONY: bench-transfer bench-transfer-deps
# Other modules add prerequisites with `bench-transfer-deps: <binary>` (e.g. raw_fi_write).
bench-transfer-deps:
bench-transfer: $(BUILD)/bin/crescent-bench bench-transfer-deps
	@CRESCENT_BUILD=$(abspath $(BUILD)) BENCH_SECONDS=$(BENCH_SECONDS) BENCH_REPEAT=$(BENCH_REPEAT) \
	    tests/bench/bench-transfer.sh
