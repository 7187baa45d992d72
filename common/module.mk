# common/: allocator wrappers, errors, logging, time, containers, config (prefix cm_).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(call objs,$(COMMON_SRCS))
ALL_SRCS    += $(COMMON_SRCS)
LIBS_OUT    += $(BUILD)/lib/libcm.a

$(BUILD)/lib/libcm.a: $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^
