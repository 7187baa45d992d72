# ha/: leader election (prefix ha_): the pure state machine ha_fsm.c, the elector glue, the
# backends ha/redis (hiredis), ha/etcd (v3 JSON gateway over libcurl), ha/k8s (Lease API), the
# library $(BUILD)/lib/libha.a and the operator tool crescent-elect.
#
# Backend sources are picked up by wildcard; HA_HAVE_ETCD / HA_HAVE_K8S tell ha_backend.c which
# backend tables exist.

HA_PKGS := hiredis libcurl jansson yaml-0.1
HA_SRCS := $(sort $(filter-out ha/crescent_elect.c, \
             $(wildcard ha/*.c ha/redis/*.c ha/etcd/*.c ha/k8s/*.c)))
HA_OBJS := $(call objs,$(HA_SRCS))
HA_DEFS := $(if $(wildcard ha/etcd/ha_etcd.c),-DHA_HAVE_ETCD) \
           $(if $(wildcard ha/k8s/ha_k8s.c),-DHA_HAVE_K8S)
HA_LIBS := $(shell pkg-config --libs $(HA_PKGS))
HA_ELECT_OBJS := $(call objs,ha/crescent_elect.c)

$(HA_OBJS) $(HA_ELECT_OBJS): MOD_CFLAGS += $(HA_DEFS) $(shell pkg-config --cflags $(HA_PKGS))

ALL_SRCS += $(HA_SRCS) ha/crescent_elect.c
LIBS_OUT += $(BUILD)/lib/libha.a
BINS     += $(BUILD)/bin/crescent-elect

$(BUILD)/lib/libha.a: $(HA_OBJS)
	@mkdir -p $(dir $@)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/bin/crescent-elect: $(HA_ELECT_OBJS) $(BUILD)/lib/libha.a $(BUILD)/lib/libcm.a
	$(LINK) $^ $(HA_LIBS) $(MALLOC_LIBS)
