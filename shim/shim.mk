# SPDX-License-Identifier: MIT
# shim/shim.mk - included by the Makefile: builds $(BUILD)/libelixir.so from shim/*.c.
#
# The library exports exactly the names listed in shim/hooks.h and shim/hooks_nccl.h (plus
# dlsym and the test-only elixir_shim_calls): the version script is generated from those
# lists by the preprocessor.
# It is linked with -Bsymbolic so that its own references to the wrappers it exports (the
# cuGetProcAddress map) bind to its own definitions, and never against libcuda: the real
# driver is found with dlopen at run time.  The tracer's library is linked in (recording,
# tracer/), with libunwind for call sites and libdl for CUPTI, and so is the policy's (the
# iteration detector and the planner, policy/).  Test programs named shim_* or
# conc_shim_* are preloaded with it, so they are rebuilt when it changes.  The rules of the
# recording's own tests are in shim/trace_tests.mk, included at the end.

SHIM_SRCS := $(wildcard shim/*.c)
SHIM_OBJS := $(SHIM_SRCS:%.c=$(BUILD)/obj/%.o)
SHIM_LIB  := $(BUILD)/libelixir.so
SHIM_MAP  := $(BUILD)/gen/libelixir.map
# tracer/tracer.mk's $(TRC_LIB) and policy/policy.mk's $(POL_LIB), defined after this file is read.
SHIM_TRC_LIB := $(BUILD)/tracer/libelixirtrace.a
SHIM_POL_LIB := $(BUILD)/lib/libelixirpolicy.a

$(SHIM_MAP): shim/libelixir.map.in shim/hooks.h shim/hooks_nccl.h
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -E -P -x c -Ishim -o $@.tmp $< && mv $@.tmp $@

$(SHIM_LIB): $(SHIM_OBJS) $(SHIM_MAP) $(SHIM_TRC_LIB) $(SHIM_POL_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libelixir.so -Wl,-Bsymbolic -Wl,--version-script=$(SHIM_MAP) \
	    -Wl,-z,defs -o $@ $(SHIM_OBJS) $(SHIM_TRC_LIB) $(SHIM_POL_LIB) $(LDFLAGS) -lunwind -ldl

SHIM_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/shim_*.c tests/conc_shim_*.c))

all: $(SHIM_LIB)
$(SHIM_TESTS): $(SHIM_LIB)

# tests/unit_arena tests the arena on its own, linked with shim/arena.c's object and nothing
# else; an explicit rule, so it wins over the generic unit_% rule (simulator objects).
$(BUILD)/tests/unit_arena: tests/unit_arena.c $(BUILD)/obj/shim/arena.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/shim/arena.o $(LDFLAGS)

# tests/unit_sysmem reads made-up cgroup trees through shim/sysmem.c's object alone.
$(BUILD)/tests/unit_sysmem: tests/unit_sysmem.c $(BUILD)/obj/shim/sysmem.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/shim/sysmem.o $(LDFLAGS)

# tests/shim_res_meminfo computes the host budget's default as the shim does, with
# shim/sysmem.c's object.
$(BUILD)/tests/shim_res_meminfo: tests/shim_res_meminfo.c tests/lib/simtest.h $(TEST_LIB_OBJS) \
                                 $(SIM_LIB) $(SHIM_LIB) $(BUILD)/obj/shim/sysmem.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/lib -rdynamic -o $@ $< $(TEST_LIB_OBJS) \
	    $(BUILD)/obj/shim/sysmem.o -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) -ldl -lm

# tests/shim_late_driver is not linked with the driver at all: the shim must start first and
# open it; an explicit rule, so it wins over the generic one (which links libcuda).
$(BUILD)/tests/shim_late_driver: tests/shim_late_driver.c $(SHIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) -ldl

# tests/conc_lock tests the biased lock on its own, linked with shim/lock.c's object only.
$(BUILD)/tests/conc_lock: tests/conc_lock.c $(BUILD)/obj/shim/lock.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/shim/lock.o $(LDFLAGS) -lpthread

include shim/trace_tests.mk
