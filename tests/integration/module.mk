# Integration tests: Criterion binaries that start the server under test (crescent-master from
# $CRESCENT_BUILD, or redis-server with CRESCENT_TEST_SERVER=redis) on free loopback ports and
# check each command's replies and error strings through hiredis. One binary per command group
# (tests/integration/test_cmd_<group>.c), all linked with harness.c. See harness.h.
IT_HARNESS_SRCS := tests/integration/harness.c
IT_CMD_SRCS     := $(sort $(wildcard tests/integration/test_cmd_*.c))
IT_CFLAGS       := $(shell pkg-config --cflags hiredis criterion)
IT_LIBS         := $(shell pkg-config --libs hiredis)

$(call objs,$(IT_HARNESS_SRCS) $(IT_CMD_SRCS)): MOD_CFLAGS += $(IT_CFLAGS)
ALL_SRCS += $(IT_HARNESS_SRCS)

$(foreach s,$(IT_CMD_SRCS),$(eval $(call unit_test,integration/$(basename $(notdir $(s))),$(s),$(call objs,$(IT_HARNESS_SRCS)),$(IT_LIBS))))

# The admin HTTP server (/metrics checked with promtool) through real HTTP and RESP clients.
TEST_SCRIPTS += tests/integration/admin_http.sh tests/integration/install.sh \
                tests/integration/snapshot.sh
# The io_uring start-up probe falling back to epoll (strace fault injection).
TEST_SCRIPTS += tests/integration/io_backend_fallback.sh
