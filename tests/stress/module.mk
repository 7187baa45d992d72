# tests/stress/: load and robustness programs against a running server (1,000 connections,
# max clients, slow readers pinning a 64 MiB reply, eviction under sustained writes, hot-key
# races, tiny-key floods, OOM).
# C programs take HOST PORT; the bash wrappers listed in TEST_SCRIPTS start the server through
# tests/lib/server.sh and run them. The programs are built by `make all`.
STRESS_UTIL_SRCS := tests/stress/st_util.c
STRESS_PROGS     := aggregate_race clients_1000 eviction overwrite_race slow_reader
STRESS_CFLAGS    := $(shell pkg-config --cflags hiredis)
STRESS_LIBS      := $(shell pkg-config --libs hiredis)
STRESS_BINS      := $(addprefix $(BUILD)/tests/stress/,$(STRESS_PROGS))

$(call objs,$(STRESS_UTIL_SRCS) $(addprefix tests/stress/,$(addsuffix .c,$(STRESS_PROGS)))): \
    MOD_CFLAGS += $(STRESS_CFLAGS)
ALL_SRCS += $(STRESS_UTIL_SRCS) $(addprefix tests/stress/,$(addsuffix .c,$(STRESS_PROGS)))

$(BUILD)/tests/stress/%: $(BUILD)/obj/tests/stress/%.o $(call objs,$(STRESS_UTIL_SRCS))
	$(LINK) $^ $(STRESS_LIBS)

all: $(STRESS_BINS)

TEST_SCRIPTS += \
    tests/stress/aggregate_race.sh \
    tests/stress/clients_1000.sh \
    tests/stress/eviction.sh \
    tests/stress/fragmentation.sh \
    tests/stress/memory_limit.sh \
    tests/stress/oom.sh \
    tests/stress/overwrite_race.sh \
    tests/stress/slow_reader.sh \
    # EOL
