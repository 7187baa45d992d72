# Unit tests for redis-compat/ (RESP parser, reader, writer, command table) and common/cm_buf.
$(eval $(call unit_test,unit/redis-compat/test_resp_parse,tests/unit/redis-compat/test_resp_parse.c,$(RC_LIB) $(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/redis-compat/test_resp_write,tests/unit/redis-compat/test_resp_write.c,$(RC_LIB) $(BUILD)/lib/libcm.a,-lm))
$(eval $(call unit_test,unit/redis-compat/test_rc_commands,tests/unit/redis-compat/test_rc_commands.c,$(RC_LIB) $(BUILD)/lib/libcm.a,))
$(eval $(call unit_test,unit/redis-compat/test_resp_vs_redis,tests/unit/redis-compat/test_resp_vs_redis.c,$(RC_LIB) $(BUILD)/lib/libcm.a,))
TEST_SCRIPTS += tests/unit/redis-compat/check-commands-def.sh
