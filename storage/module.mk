# storage/: the SSD tier (prefix sto_), a library with no master or network knowledge
# (docs/storage.md). Built into $(BUILD)/lib/libsto.a; link it with libcm.a and -luring.
STO_SRCS := $(wildcard storage/*.c)
ALL_SRCS += $(STO_SRCS)
LIBS_OUT += $(BUILD)/lib/libsto.a
STO_LIBS := $(BUILD)/lib/libsto.a $(BUILD)/lib/libcm.a
STO_LDLIBS := $(shell pkg-config --libs liburing)

$(BUILD)/lib/libsto.a: $(call objs,$(STO_SRCS))
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^
