# SPDX-License-Identifier: MIT
# tracer/tracer.mk - included by the Makefile: the trace library (format, writer, reader).
#
# tracer/*.c compile with the generic object rule into $(TRC_OBJS) and are archived into
# $(TRC_LIB) for the shim and the tools to link.  The tests/unit_trace_* programs are linked
# with the tracer's objects and nothing else: a static pattern rule is an explicit rule for
# each of them, so it wins over the Makefile's generic unit_% rule (simulator objects).
# tests/fuzz_trace.sh builds the libFuzzer target tests/fuzz/trace_reader.c itself (clang).

TRC_SRCS  := $(wildcard tracer/*.c)
TRC_OBJS  := $(TRC_SRCS:%.c=$(BUILD)/obj/%.o)
TRC_LIB   := $(BUILD)/tracer/libelixirtrace.a
TRC_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit_trace_*.c))

$(TRC_LIB): $(TRC_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $(TRC_OBJS)

all: $(TRC_LIB)

$(TRC_TESTS): $(BUILD)/tests/%: tests/%.c $(TRC_OBJS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itracer -o $@ $< $(TRC_OBJS) $(LDFLAGS)
