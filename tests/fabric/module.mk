# tests/fabric/: fabric (libfabric) and rdma (ibverbs) transport tests, and the raw libfabric
# baseline for the transfer benchmark (tests/bench/raw_fi_write.c).
FABRIC_LIBS := $(shell pkg-config --libs libfabric 2>/dev/null)
FABRIC_CFLAGS := $(shell pkg-config --cflags libfabric 2>/dev/null)

# raw_fi_write: minimal FI_EP_RDM + FI_RMA fi_write loop; bench/bench-transfer.sh runs it.
ifneq ($(FABRIC_LIBS),)
RAW_FI_WRITE := $(BUILD)/tests/bench/raw_fi_write
$(call objs,tests/bench/raw_fi_write.c): MOD_CFLAGS += $(FABRIC_CFLAGS)
$(RAW_FI_WRITE): $(call objs,tests/bench/raw_fi_write.c)
	$(LINK) $^ $(FABRIC_LIBS)
BINS     += $(RAW_FI_WRITE)
ALL_SRCS += tests/bench/raw_fi_write.c
bench-transfer-deps: $(RAW_FI_WRITE)
endif

# test_xfer_fabric: two-process fabric transport tests over tcp;ofi_rxm on loopback.
ifeq ($(XFER_HAVE_FABRIC),1)
FABRIC_TEST := $(BUILD)/tests/fabric/test_xfer_fabric
$(call objs,tests/fabric/test_xfer_fabric.c): MOD_CFLAGS += $(XFER_DEFS)
$(FABRIC_TEST): $(call objs,tests/fabric/test_xfer_fabric.c) $(BUILD)/lib/libxfer.a \
                $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS)
TEST_PROGS += $(FABRIC_TEST)
ALL_SRCS   += tests/fabric/test_xfer_fabric.c
endif

# test_xfer_rdma_mock: rdma transport logic with link-time ibverbs mocks (no RDMA hardware).
ifeq ($(XFER_HAVE_VERBS),1)
XFB_COMMA := ,
RDMA_MOCK_WRAP := $(addprefix -Wl$(XFB_COMMA)--wrap=,ibv_get_device_list ibv_free_device_list \
    ibv_get_device_name ibv_open_device ibv_close_device ibv_query_device ibv_query_gid \
    ibv_alloc_pd ibv_dealloc_pd ibv_create_cq ibv_destroy_cq ibv_create_qp ibv_destroy_qp \
    ibv_modify_qp ibv_reg_mr_iova2 ibv_dereg_mr ibv_get_async_event ibv_ack_async_event)
$(call objs,tests/fabric/test_xfer_rdma_mock.c): MOD_CFLAGS += $(XFER_DEFS)
$(BUILD)/tests/fabric/test_xfer_rdma_mock: $(call objs,tests/fabric/test_xfer_rdma_mock.c) \
        $(BUILD)/lib/libxfer.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(RDMA_MOCK_WRAP) $(XFER_LIBS) $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/fabric/test_xfer_rdma_mock
ALL_SRCS   += tests/fabric/test_xfer_rdma_mock.c
endif

# test_xfer_rdma_nodev: without RDMA devices, installing rdma says so clearly.
ifeq ($(XFER_HAVE_VERBS),1)
$(BUILD)/tests/fabric/test_xfer_rdma_nodev: $(call objs,tests/fabric/test_xfer_rdma_nodev.c) \
        $(BUILD)/lib/libxfer.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS)
TEST_PROGS += $(BUILD)/tests/fabric/test_xfer_rdma_nodev
ALL_SRCS   += tests/fabric/test_xfer_rdma_nodev.c
endif

# test_xfer_gpu: CUDA detection and the pinned pool, with a stand-in libcudart (no GPU needed).
FAKE_CUDART := $(BUILD)/tests/fabric/libfake_cudart.so
$(FAKE_CUDART): $(call objs,tests/fabric/mocks/fake_cudart.c)
	$(LINK) -shared $^
$(call objs,tests/fabric/test_xfer_gpu.c): MOD_CFLAGS += $(XFER_DEFS) \
    -DFAKE_CUDART='"$(abspath $(FAKE_CUDART))"'
$(BUILD)/tests/fabric/test_xfer_gpu: $(call objs,tests/fabric/test_xfer_gpu.c) \
        $(BUILD)/lib/libxfer.a $(BUILD)/lib/libcm.a | $(FAKE_CUDART)
	$(LINK) $(filter %.o %.a,$^) $(XFER_LIBS) $(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/fabric/test_xfer_gpu
ALL_SRCS   += tests/fabric/test_xfer_gpu.c tests/fabric/mocks/fake_cudart.c

# test_xfer_gpu_real: the same on a real CUDA device; skips (77) without one.
ifeq ($(XFER_HAVE_FABRIC),1)
$(call objs,tests/fabric/test_xfer_gpu_real.c): MOD_CFLAGS += $(XFER_DEFS)
$(BUILD)/tests/fabric/test_xfer_gpu_real: $(call objs,tests/fabric/test_xfer_gpu_real.c) \
        $(BUILD)/lib/libxfer.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS) -ldl
TEST_PROGS += $(BUILD)/tests/fabric/test_xfer_gpu_real
ALL_SRCS   += tests/fabric/test_xfer_gpu_real.c
endif
