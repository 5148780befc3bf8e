# SPDX-License-Identifier: MIT
# tools/trace/trace.mk - included by the Makefile: the elixir-trace command-line tool.
#
# tools/trace/*.c (the model, the figures, symbolisation, the commands and the exporters)
# compile with the generic object rule and link with the trace library $(TRC_LIB) from
# tracer/tracer.mk and the policy library $(POL_LIB) from policy/policy.mk (`plan`) into
# $(BUILD)/bin/elixir-trace.  The Makefile's generic tools rule only
# takes tools/*.c, one file per tool, hence this rule.  Its tests are the
# tests/unit_trace_tool_* programs (linked by tracer/tracer.mk's rule), which write traces
# and run this binary; tests/unit_dwarf_line tests the line-table reader alone.

TT_SRCS := $(wildcard tools/trace/*.c)
TT_OBJS := $(TT_SRCS:%.c=$(BUILD)/obj/%.o)
TT_BIN  := $(BUILD)/bin/elixir-trace

$(TT_BIN): $(TT_OBJS) $(TRC_LIB) $(POL_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(TT_OBJS) $(TRC_LIB) $(POL_LIB) $(LDFLAGS) $(TRC_LDLIBS) -lm

all: $(TT_BIN)

# tests/unit_dwarf_line tests the DWARF line reader on its own, linked with its object only.
$(BUILD)/tests/unit_dwarf_line: tests/unit_dwarf_line.c $(BUILD)/obj/tools/trace/dwarf_line.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/tools/trace/dwarf_line.o $(LDFLAGS)
