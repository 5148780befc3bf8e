# SPDX-License-Identifier: MIT
# policy/policy.mk - included by the Makefile: the policy library (iteration detection, the
# planner, its cost model), pure C that the shim and elixir-trace link.
#
# policy/*.c compile with the generic object rule and are archived into $(POL_LIB); they need
# nothing but libc and libm.  Explicit rules here win over the Makefile's generic ones (a
# static pattern rule is an explicit rule for each of its targets):
#   tests/unit_iter, tests/unit_policy_*   the policy's library and nothing else;
#   bench/policy_plan                      the same (it times the planner, no driver).

POL_SRCS := $(wildcard policy/*.c)
POL_OBJS := $(POL_SRCS:%.c=$(BUILD)/obj/%.o)
POL_LIB  := $(BUILD)/lib/libelixirpolicy.a
POL_PROGS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit_policy_*.c)) \
             $(BUILD)/tests/unit_iter $(BUILD)/bench/policy_plan

$(POL_LIB): $(POL_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $(POL_OBJS)

all: $(POL_LIB)

$(POL_PROGS): $(BUILD)/%: %.c $(POL_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ipolicy -o $@ $< $(POL_LIB) $(LDFLAGS) -lm
