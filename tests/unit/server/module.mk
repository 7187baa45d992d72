# Unit tests for server/ internals that need no running server.
$(eval $(call unit_test,unit/server/test_srv_seg,tests/unit/server/test_srv_seg.c,$(BUILD)/obj/server/srv_seg.o $(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/server/test_srv_db_evict,tests/unit/server/test_srv_db_evict.c,$(BUILD)/obj/server/srv_db.o $(BUILD)/obj/server/srv_notify.o $(BUILD)/obj/server/srv_seg.o $(BUILD)/lib/libcm.a,$(MALLOC_LIBS)))
