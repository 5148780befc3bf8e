# SPDX-License-Identifier: MIT
# sim/cupti/cupti.mk - included by the Makefile: the libcupti.so stand-in.
#
# $(BUILD)/sim/libcupti.so.13 (soname libcupti.so.13, with a libcupti.so link beside it, as a
# CUDA install lays them out) is built from sim/cupti/*.c, which the Makefile's sim/*.c
# wildcard does not reach, so none of it is in libcuda.so.1.  It is linked against the
# simulated libcuda.so.1 for the activity interface (sim_activity_attach), with -z now so that
# loading it beside any other libcuda fails at dlopen rather than at the first call, and with
# -z nodelete because the simulator keeps its callbacks for the life of the process.
# Result strings are generated from cupti_result.h by the simulator's sim/gen_errors.awk.  Tests tests/cupti_*.c and
# tests/conc_cupti_*.c dlopen it through LD_LIBRARY_PATH, so they are rebuilt after it.

CUPTI_SRCS  := $(wildcard sim/cupti/*.c)
CUPTI_OBJS  := $(CUPTI_SRCS:%.c=$(BUILD)/obj/%.o)
CUPTI_LIB   := $(BUILD)/sim/libcupti.so.13
CUPTI_GEN   := $(BUILD)/gen/cupti_results.h
CUPTI_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,\
                 $(wildcard tests/cupti_*.c tests/conc_cupti_*.c))

$(CUPTI_GEN): sim/gen_errors.awk $(CUDA_HOME)/include/cupti_result.h | $(DEPS_OK)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)awk -v enum=CUptiResult -v prefix=CUPTI_ -f sim/gen_errors.awk \
	    $(CUDA_HOME)/include/cupti_result.h > $@.tmp && mv $@.tmp $@

$(CUPTI_OBJS): $(CUPTI_GEN)

$(CUPTI_LIB): $(CUPTI_OBJS) sim/cupti/libcupti.map $(SIM_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcupti.so.13 -Wl,--version-script=sim/cupti/libcupti.map \
	    -Wl,-z,defs -Wl,-z,now -Wl,-z,nodelete -o $@ $(CUPTI_OBJS) \
	    -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS)
	$(Q)ln -sf libcupti.so.13 $(@D)/libcupti.so

all: $(CUPTI_LIB)
$(CUPTI_TESTS): $(CUPTI_LIB)
