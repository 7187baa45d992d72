# Crescent top-level Makefile: non-recursive, one module.mk per folder (CONTRIBUTING.md, "Build").
#
#   make            build everything into $(BUILD) (default build/)
#   make run        build and start crescent-master with a 1 GiB embedded segment
#   make test       the whole suite (unit, integration, compat, format-check), then the
#                   network suites again on the epoll backend (tests/module.mk NET_TEST_*)
#   make SANITIZER=address test    the suite under ASan+UBSan
#   make fuzz       build and run every libFuzzer target (FUZZ_SECONDS each)
#   make bench      master vs redis-server benchmark; make bench-transfer for the engine
#   make format / format-check     clang-format the tree / check it

.DEFAULT_GOAL := all
SHELL := /bin/bash

include mk/common.mk
include mk/quiet.mk
include mk/install.mk

# Filled in by the modules.
BINS         :=
LIBS_OUT     :=
TEST_PROGS   :=
TEST_SCRIPTS :=
FUZZ_TARGETS :=
ALL_SRCS     :=

MODULES := common redis-compat server transfer ha client storage tests bench
include $(wildcard $(addsuffix /module.mk,$(MODULES)))

-include $(patsubst %.c,$(BUILD)/obj/%.d,$(ALL_SRCS))

.PHONY: all run test test-run check fuzz bench format format-check clean install

all: $(LIBS_OUT) $(BINS) $(TEST_PROGS)

RUN_PORT   ?= 50051
RUN_MEMORY ?= 1gb
run: all
	$(BUILD)/bin/crescent-master --bind 127.0.0.1 --port $(RUN_PORT) --memory $(RUN_MEMORY) \
	    --metrics_host 127.0.0.1

test: all
	@$(MAKE) --no-print-directory format-check
	@CRESCENT_BUILD=$(abspath $(BUILD)) SANITIZER=$(SANITIZER) \
	    tests/run-suite.sh $(TEST_PROGS) $(TEST_SCRIPTS) \
	    $(addprefix epoll:,$(NET_TEST_PROGS) $(NET_TEST_SCRIPTS))

check: test

FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_TARGETS)
	@set -e; for f in $(FUZZ_TARGETS); do \
	    name=$$(basename $$f); mkdir -p tests/fuzz/corpus-$$name; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        tests/fuzz/corpus-$$name $$(ls -d tests/fuzz/seeds/$$name 2>/dev/null) 2>&1 \
	        | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Done' || true; \
	    test $${PIPESTATUS[0]} -eq 0; \
	done

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v '^deps/')
format:
	@clang-format -i $(FORMAT_FILES)

format-check:
	@if clang-format --dry-run --Werror $(FORMAT_FILES) 2>/tmp/crescent-format.$$$$; then \
	    echo "format-check: $(words $(FORMAT_FILES)) files clean"; rm -f /tmp/crescent-format.$$$$; \
	else cat /tmp/crescent-format.$$$$ | head -40; rm -f /tmp/crescent-format.$$$$; \
	    echo "format-check: run 'make format'"; exit 1; fi

clean:
	rm -rf $(BUILD) build-*
