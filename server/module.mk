# server/: crescent-master (prefix srv_).
SERVER_SRCS := $(wildcard server/*.c)
SERVER_OBJS := $(call objs,$(SERVER_SRCS))
ALL_SRCS    += $(SERVER_SRCS)
BINS        += $(BUILD)/bin/crescent-master

$(SERVER_OBJS): MOD_CFLAGS += $(MALLOC_CFLAGS)

# The master links the transfer engine too: it reads and writes pool replicas for plain
# GET/SET (server/srv_pool_kv.c); libsto for the SSD tier (srv_offload.c) and snapshot CRCs;
# libxfer also gives MC.MOUNT its descriptor check (xfer_desc_inspect); HA mode (srv_ha.c,
# srv_oplog.c) links the election library and its backends' libraries.
$(BUILD)/bin/crescent-master: $(SERVER_OBJS) $(BUILD)/lib/libpool.a $(BUILD)/lib/libsto.a \
                              $(BUILD)/lib/libha.a $(BUILD)/lib/librc.a $(BUILD)/lib/libxfer.a \
                              $(BUILD)/lib/libcm.a
	$(LINK) $^ $(shell pkg-config --libs libmicrohttpd hiredis) $(HA_LIBS) $(CM_EV_LIBS) \
	    $(STO_LDLIBS) $(MALLOC_LIBS) $(XFER_LIBS) -lm

# server/pool/: the distributed store's pool metadata, a pure core (prefix pool_) that the
# MC.* command handlers adapt; built as a library for the master and the unit tests.
POOL_SRCS := $(wildcard server/pool/*.c)
POOL_OBJS := $(call objs,$(POOL_SRCS))
ALL_SRCS  += $(POOL_SRCS)
LIBS_OUT  += $(BUILD)/lib/libpool.a

$(BUILD)/lib/libpool.a: $(POOL_OBJS)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^
