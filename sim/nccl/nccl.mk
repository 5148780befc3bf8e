# SPDX-License-Identifier: MIT
# sim/nccl/nccl.mk - included by the Makefile: the libnccl.so.2 stand-in.
#
# $(BUILD)/sim/libnccl.so.2 (soname libnccl.so.2, with a libnccl.so link beside it) is built
# from sim/nccl/*.c against CUDA's own nccl.h, and linked against the simulated libcuda.so.1:
# its kernels are host functions registered with sim_kernel_register, everything else is the
# public Driver API.  -z nodelete keeps the registered kernels valid for the life of the
# process.  Tests tests/nccl_*.c, shim_nccl_*.c, conc_nccl_*.c, shim_plan_nccl*.c and
# shim_trace_nccl*.c are linked with it (found through LD_LIBRARY_PATH at run time), so they
# are rebuilt after it.

NCCL_SRCS  := $(wildcard sim/nccl/*.c)
NCCL_OBJS  := $(NCCL_SRCS:%.c=$(BUILD)/obj/%.o)
NCCL_LIB   := $(BUILD)/sim/libnccl.so.2
NCCL_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,\
                $(wildcard tests/nccl_*.c tests/shim_nccl_*.c tests/conc_nccl_*.c \
                           tests/shim_plan_nccl*.c tests/shim_trace_nccl*.c))

$(NCCL_LIB): $(NCCL_OBJS) sim/nccl/libnccl.map $(SIM_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script=sim/nccl/libnccl.map \
	    -Wl,-z,defs -Wl,-z,now -Wl,-z,nodelete -o $@ $(NCCL_OBJS) \
	    -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) -lpthread
	$(Q)ln -sf libnccl.so.2 $(@D)/libnccl.so

all: $(NCCL_LIB)
$(NCCL_TESTS): $(NCCL_LIB)

# NCCL tests are linked against the stand-in (-l:libnccl.so.2), as a program built with
# -lnccl is; the more specific patterns win over the generic test rule.
define NCCL_TEST_RULE
$(BUILD)/tests/$(1)%: tests/$(1)%.c tests/lib/simtest.h $(TEST_LIB_OBJS) $(SIM_LIB) $(NCCL_LIB)
	$$(call msg,CC,$$<)
	$(Q)mkdir -p $$(@D)
	$(Q)$$(CC) $$(CFLAGS) -Itests/lib -rdynamic -o $$@ $$< $(TEST_LIB_OBJS) -L$(BUILD)/sim \
	    -l:libnccl.so.2 -l:libcuda.so.1 $$(LDFLAGS) -ldl -lm
endef
$(foreach p,nccl_ shim_nccl_ conc_nccl_ shim_plan_nccl,$(eval $(call NCCL_TEST_RULE,$(p))))
# conc_nccl_* run themselves under the shim too.
$(filter $(BUILD)/tests/conc_nccl_%,$(NCCL_TESTS)): $(SHIM_LIB)
