# SPDX-License-Identifier: MIT
# tracer/tracer.mk - included by the Makefile: the trace library (format, writer, reader,
# recorder, call stacks, Python frames, CUPTI client).
#
# tracer/*.c compile with the generic object rule into $(TRC_OBJS) and are archived into
# $(TRC_LIB) for the shim and the tools to link; whatever links them needs $(TRC_LDLIBS)
# (libunwind for stack.c, libdl for cupti.c and pyframes.c).  Explicit rules here win over the
# Makefile's generic ones (a static pattern rule is an explicit rule for each of its targets):
#   tests/unit_trace_*, tests/conc_trace_*   the tracer's objects and nothing else;
#   tests/trace_cupti_*                      the tracer's objects, the simulator's libcuda and
#                                            tests/lib (they launch kernels; the simulator's
#                                            libcupti.so is found with dlopen at run time);
#   bench/trace_record                       the tracer's objects.
# tests/fuzz_trace.sh builds the libFuzzer target tests/fuzz/trace_reader.c itself (clang).

TRC_SRCS    := $(wildcard tracer/*.c)
TRC_OBJS    := $(TRC_SRCS:%.c=$(BUILD)/obj/%.o)
TRC_LIB     := $(BUILD)/tracer/libelixirtrace.a
TRC_LDLIBS  := -lunwind -ldl
TRC_TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,\
                 $(wildcard tests/unit_trace_*.c tests/conc_trace_*.c))
TRC_CUPTI_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/trace_cupti_*.c))
TRC_TEST_LIB    := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/lib/*.c))

$(TRC_LIB): $(TRC_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $(TRC_OBJS)

all: $(TRC_LIB)

$(TRC_TESTS): $(BUILD)/tests/%: tests/%.c $(TRC_OBJS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itracer -o $@ $< $(TRC_OBJS) $(LDFLAGS) $(TRC_LDLIBS)

$(TRC_CUPTI_TESTS): $(BUILD)/tests/%: tests/%.c tests/lib/simtest.h $(TRC_OBJS) $(TRC_TEST_LIB) $(SIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itracer -Itests/lib -rdynamic -o $@ $< $(TRC_OBJS) $(TRC_TEST_LIB) \
	    -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) $(TRC_LDLIBS) -lm

$(BUILD)/bench/trace_record: bench/trace_record.c $(TRC_OBJS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itracer -o $@ $< $(TRC_OBJS) $(LDFLAGS) $(TRC_LDLIBS)
