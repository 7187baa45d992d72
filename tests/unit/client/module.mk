# Unit tests for client/store/ internals that need no master.
$(call objs,tests/unit/client/test_cli_reply.c): MOD_CFLAGS += $(shell pkg-config --cflags hiredis)
$(eval $(call unit_test,unit/client/test_cli_reply,tests/unit/client/test_cli_reply.c,$(BUILD)/obj/client/store/cli_reply.o,$(shell pkg-config --libs hiredis)))
