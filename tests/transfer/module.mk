# tests/transfer/: transfer engine tests (codecs, engine + fault transport, two-process shm/tcp,
# public libcrescent API) and the fuzz targets for the descriptor decoder and the wire header.
# The fabric/rdma tests (tests/transfer/*fabric*, *rdma*) bring their own rules below.

XFER_TEST_LIBS := $(BUILD)/lib/libxfer.a $(BUILD)/lib/libcm.a

$(eval $(call unit_test,transfer/test_xfer_codec,tests/transfer/test_xfer_codec.c,$(XFER_TEST_LIBS),$(XFER_LIBS)))
$(eval $(call unit_test,transfer/test_xfer_engine,tests/transfer/test_xfer_engine.c,$(XFER_TEST_LIBS),$(XFER_LIBS)))
$(eval $(call unit_test,transfer/test_xfer_twoproc,tests/transfer/test_xfer_twoproc.c tests/transfer/xfer_test_util.c tests/transfer/xt_exec.c,$(XFER_TEST_LIBS),$(XFER_LIBS)))

# The public API test links the shared library, as applications do.
API_TEST_SRCS := tests/transfer/test_crescent_transfer_api.c tests/transfer/xt_exec.c
$(BUILD)/tests/transfer/test_crescent_transfer_api: $(call objs,$(API_TEST_SRCS)) $(BUILD)/lib/libcrescent.so
	$(LINK) $(call objs,$(API_TEST_SRCS)) \
	    -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) -lcrescent -ldl $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/transfer/test_crescent_transfer_api
ALL_SRCS   += $(API_TEST_SRCS)

# libFuzzer targets (clang only).
ifneq ($(shell command -v clang),)
FUZZ_XFER_SRCS := transfer/core/xfer_desc.c transfer/core/xfer_wire.c transfer/core/xfer_util.c \
                  common/cm_mem.c common/cm_errno.c
$(BUILD)/fuzz/fuzz_xfer_desc: tests/fuzz/fuzz_xfer_desc.c $(FUZZ_XFER_SRCS)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $^ -pthread
$(BUILD)/fuzz/fuzz_xfer_wire: tests/fuzz/fuzz_xfer_wire.c transfer/core/xfer_wire.c common/cm_errno.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $^ -pthread
FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_xfer_desc $(BUILD)/fuzz/fuzz_xfer_wire
endif
TEST_SCRIPTS += tests/transfer/test_bench_transfer.sh
