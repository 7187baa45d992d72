# server/: crescent-master (prefix srv_).
SERVER_SRCS := $(wildcard server/*.c)
SERVER_OBJS := $(call objs,$(SERVER_SRCS))
ALL_SRCS    += $(SERVER_SRCS)
BINS        += $(BUILD)/bin/crescent-master

$(SERVER_OBJS): MOD_CFLAGS += $(MALLOC_CFLAGS)

$(BUILD)/bin/crescent-master: $(SERVER_OBJS) $(BUILD)/lib/librc.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(CM_EV_LIBS) $(MALLOC_LIBS) -lm
