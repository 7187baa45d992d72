# Shared build settings: compilers, warning flags, sanitizers, dependencies, object rules.

BUILD      ?= build
CC         ?= cc
AR         ?= ar
OPT        ?= -O2
WERROR     ?= 1
SANITIZER  ?=
PREFIX     ?= /usr/local
# The release version (crescent-master --version prints the same, server/srv_server.h).
CRESCENT_VERSION := $(shell sed -n 's/^\#define SRV_VERSION *"\(.*\)"/\1/p' server/srv_server.h)

# Every library a module may use, found with pkg-config (docs/architecture.md, "Dependencies").
PKG_DEPS   := hiredis libfabric liburing jemalloc libcurl jansson yaml-0.1 criterion libmicrohttpd
TOOL_DEPS  := redis-server redis-cli redis-benchmark etcd iperf3 clang clang-format python3 promtool

ifneq ($(MAKECMDGOALS),format)
ifneq ($(MAKECMDGOALS),format-check)
DEPS_OK := $(shell pkg-config --exists $(PKG_DEPS) && for t in $(TOOL_DEPS); do \
             command -v $$t >/dev/null || exit 1; done && echo yes)
ifneq ($(DEPS_OK),yes)
$(info install-deps: a dependency is missing, running scripts/install-deps.sh)
DEPS_RC := $(shell scripts/install-deps.sh >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error scripts/install-deps.sh failed)
endif
endif
endif
endif

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings \
        -Wpointer-arith -Wundef -Wshadow -Wformat=2 -Wno-format-nonliteral
ifeq ($(WERROR),1)
WARN += -Werror
endif

CRESCENT_CFLAGS  := -std=gnu11 $(WARN) $(OPT) -g -fno-omit-frame-pointer -pthread -fPIC \
                    -MMD -MP -I. -Iclient/include -I$(BUILD)/gen
CRESCENT_LDFLAGS := -pthread
MALLOC_LIBS      := $(shell pkg-config --libs jemalloc)
MALLOC_CFLAGS    := -DCM_USE_JEMALLOC

ifneq ($(SANITIZER),)
ifeq ($(SANITIZER),address)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
else
SAN_FLAGS := -fsanitize=$(SANITIZER) -fno-sanitize-recover=all
endif
CRESCENT_CFLAGS  += $(SAN_FLAGS)
CRESCENT_LDFLAGS += $(SAN_FLAGS)
# libc malloc under sanitizers, so ASan sees every allocation.
MALLOC_LIBS   :=
MALLOC_CFLAGS :=
endif

# Optional CUDA support: enabled when the toolkit's headers exist.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
HAVE_CUDA ?= 1
else
HAVE_CUDA ?= 0
endif

# Rebuild everything when the flags change (Redis .make-settings).
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW   := $(CC) $(CRESCENT_CFLAGS) $(CFLAGS) $(MALLOC_CFLAGS) HAVE_CUDA=$(HAVE_CUDA)
ifneq ($(shell cat $(FLAGS_STAMP) 2>/dev/null),$(FLAGS_NOW))
$(shell rm -rf $(BUILD)/obj; mkdir -p $(BUILD); echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))
endif

# objs(SRCS): object paths for sources.
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CRESCENT_CFLAGS) $(CFLAGS) $(MOD_CFLAGS) -c -o $@ $<

# link_rule is used by modules: $(call link,OUTPUT) in a recipe.
LINK = $(QUIET_LINK)mkdir -p $(dir $@) && $(CC) $(CRESCENT_LDFLAGS) $(LDFLAGS) -o $@

CRITERION_LIBS := $(shell pkg-config --libs criterion)

# $(call unit_test,NAME,SRCS,LINK_INPUTS,EXTRA_LIBS): a Criterion test binary
# $(BUILD)/tests/NAME built from SRCS plus LINK_INPUTS (archives), registered in TEST_PROGS.
define unit_test
$(BUILD)/tests/$(1): $(call objs,$(2)) $(3)
	$$(LINK) $$^ $(4) $$(CRITERION_LIBS)
TEST_PROGS += $(BUILD)/tests/$(1)
ALL_SRCS   += $(2)
endef
