# tests/fuzz/: libFuzzer targets for the byte-oriented decoders (CONTRIBUTING.md, "Tests"). Each target
# compiles its sources itself with clang and the fuzzer sanitizers, apart from the normal
# $(BUILD)/obj objects, into $(BUILD)/fuzz/<name>; `make fuzz` runs every FUZZ_TARGETS entry.
# Seeds live in tests/fuzz/seeds/<name>/, new corpus entries in tests/fuzz/corpus-<name>/.
FUZZ_CC     ?= clang
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer -I. \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_RESP_SRCS := redis-compat/resp_parse.c redis-compat/resp_reader.c \
                  redis-compat/resp_write.c common/cm_buf.c common/cm_mem.c common/cm_errno.c
FUZZ_RESP_HDRS := redis-compat/resp.h redis-compat/resp_write.h common/cm_buf.h common/cm_mem.h

$(BUILD)/fuzz/fuzz_resp_request: tests/fuzz/fuzz_resp_request.c $(FUZZ_RESP_SRCS) $(FUZZ_RESP_HDRS)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -pthread -lm

$(BUILD)/fuzz/fuzz_resp_reply: tests/fuzz/fuzz_resp_reply.c $(FUZZ_RESP_SRCS) $(FUZZ_RESP_HDRS)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -pthread -lm

FUZZ_TARGETS += $(BUILD)/fuzz/fuzz_resp_request $(BUILD)/fuzz/fuzz_resp_reply
