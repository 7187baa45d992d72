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
endif

# test_xfer_fabric: two-process fabric transport tests over tcp;ofi_rxm on loopback.
ifeq ($(XFER_HAVE_FABRIC),1)
FABRIC_TEST := $(BUILD)/tests/fabric/test_xfer_fabric
$(FABRIC_TEST): $(call objs,tests/fabric/test_xfer_fabric.c) $(BUILD)/lib/libxfer.a \
                $(BUILD)/lib/libcm.a
	$(LINK) $^ $(XFER_LIBS)
TEST_PROGS += $(FABRIC_TEST)
ALL_SRCS   += tests/fabric/test_xfer_fabric.c
endif
