# redis-compat/: RESP request parser, reply reader and writer, Redis command table (prefixes
# resp_, rc_). Everything is archived into $(RC_LIB), which the server links.
RC_SRCS := $(wildcard redis-compat/*.c)
RC_OBJS := $(call objs,$(RC_SRCS))
RC_LIB  := $(BUILD)/lib/librc.a
ALL_SRCS += $(RC_SRCS)
LIBS_OUT += $(RC_LIB)

$(RC_LIB): $(RC_OBJS)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^
