# SPDX-License-Identifier: MIT
# shim/trace_tests.mk - included by shim/shim.mk: the tests of the shim's recording.
#
# tests/shim_trace_*.c and conc_shim_trace_*.c are shim tests (preloaded with libelixir.so, linked
# with the simulated libcuda and tests/lib like every test) that read the trace they made with
# the tracer's reader, so they link the tracer's library too (and the NCCL stand-in, for
# those with nccl in their names).  Both are explicit rules (a
# static pattern rule is one for each target), so they win over the Makefile's generic ones.
# The tracer's library is named by path: tracer/tracer.mk, which defines $(TRC_LIB), is read
# after this file.

SHIM_TRACE_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,\
                      $(wildcard tests/shim_trace_*.c tests/conc_shim_trace_*.c))
SHIM_TRACE_TEST_LIB := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/lib/*.c))

$(SHIM_TRACE_TESTS): $(BUILD)/tests/%: tests/%.c tests/lib/simtest.h tests/shim_trace_test.h \
                     $(SHIM_TRACE_TEST_LIB) $(SHIM_TRC_LIB) $(SIM_LIB) $(SHIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/lib -Itracer -rdynamic -o $@ $< $(SHIM_TRACE_TEST_LIB) \
	    $(SHIM_TRC_LIB) -L$(BUILD)/sim $(if $(findstring nccl,$*),-l:libnccl.so.2) \
	    -l:libcuda.so.1 $(LDFLAGS) -lunwind -ldl -lm
