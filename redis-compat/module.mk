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

# The command table is data (CONTRIBUTING.md, "Layout"): JSON in, checked-in .def files out.
RC_JSON := $(wildcard redis-compat/commands/*.json)
redis-compat/commands.def redis-compat/commands_meta.def &: $(RC_JSON) tools/gen-commands.py
	$(QUIET_GEN)python3 tools/gen-commands.py && touch redis-compat/commands.def redis-compat/commands_meta.def
$(BUILD)/obj/redis-compat/rc_commands.o: redis-compat/commands.def redis-compat/commands_meta.def
