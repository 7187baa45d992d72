# common/: allocator wrappers, errors, logging, time, containers, config (prefix cm_).
# cm_ev_uring.c (the io_uring event loop) goes into libcm.a only, not into COMMON_OBJS, which
# libcrescent.so takes whole: binaries that use cm_ev_create_uring link $(CM_EV_LIBS). So does
# cm_http.c (the admin HTTP servers' plumbing): its users link libmicrohttpd.
CM_EV_URING_SRCS := common/cm_ev_uring.c
CM_HTTP_SRCS     := common/cm_http.c
COMMON_SRCS := $(filter-out $(CM_EV_URING_SRCS) $(CM_HTTP_SRCS),$(wildcard common/*.c))
COMMON_OBJS := $(call objs,$(COMMON_SRCS))
ALL_SRCS    += $(COMMON_SRCS) $(CM_EV_URING_SRCS) $(CM_HTTP_SRCS)
LIBS_OUT    += $(BUILD)/lib/libcm.a
CM_EV_LIBS  := $(shell pkg-config --libs liburing)

$(BUILD)/lib/libcm.a: $(COMMON_OBJS) $(call objs,$(CM_EV_URING_SRCS) $(CM_HTTP_SRCS))
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^
