# Unit tests for server/ internals that need no running server.
$(eval $(call unit_test,unit/server/test_srv_seg,tests/unit/server/test_srv_seg.c,$(BUILD)/obj/server/srv_seg.o $(BUILD)/lib/libcm.a,))
