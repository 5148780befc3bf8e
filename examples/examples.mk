# SPDX-License-Identifier: MIT
# examples/examples.mk - included by the Makefile: the example training job's kernels and `make demo`.
#
# build/examples/kernels_sim.so holds the host versions of the kernels for the simulator; it is
# linked against the simulated libcuda.so.1 so that sim_kernel_cost/sim_kernel_access resolve
# even when the driver was loaded with RTLD_LOCAL.  examples/kernels.ptx is checked in and
# regenerated from kernels.cu when nvcc is installed (its output is deterministic).

KERNELS_SIM := $(BUILD)/examples/kernels_sim.so
# The kernels are the simulator's compute: -O3 vectorizes their blocked loops (twice the speed of
# -O2 here) and sqrtf without errno lets Adam vectorize.  Neither changes a result: no a*b+c is
# contracted (-ffp-contract=off, for clang too) and nothing is reassociated, so every build of
# kernels_sim.c gives the same bits.
KERNELS_CFLAGS ?= -O3 -fno-math-errno -ffp-contract=off
EXAMPLES += $(KERNELS_SIM)

$(KERNELS_SIM): examples/kernels_sim.c examples/examples.mk sim/include/simcuda.h $(SIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KERNELS_CFLAGS) -shared -o $@ $< -L$(BUILD)/sim -l:libcuda.so.1 \
	    $(LDFLAGS) -lm

NVCC_FOUND := $(shell command -v $(NVCC) 2>/dev/null)
ifneq ($(NVCC_FOUND),)
EXAMPLES += examples/kernels.ptx
examples/kernels.ptx: examples/kernels.cu
	$(call msg,NVCC,$<)
	$(Q)$(NVCC) -ptx -arch=compute_80 -o $@ $<
endif

# `make demo` (examples/demo.sh): a job too large for the device trained under libelixir.so,
# on the simulator's default 1 GiB device or, when an NVIDIA driver is loaded, on the GPU with
# a budget of a quarter of the job; then the same job on a device that holds it, and a verdict
# of what Elixir did, with the trace, its plot and its report in $(BUILD)/demo.  DEMO_JOB,
# DEMO_STEPS, DEMO_SIM_MEMORY... pass through (see the script).
# `make demo ELIXIR=0`: the demo preset without the shim, on the GPU or on a simulated device
# of 6 GiB (DEMO_SIM_ARGS) that holds it.
DEMO_ARGS     ?= --preset demo
DEMO_SIM_ARGS ?= --memory 6G
.PHONY: demo
ifeq ($(ELIXIR),0)
demo: $(SIM_LIB) $(EXAMPLES) $(BUILD)/bin/elixir-sim
	$(Q)if [ -e /proc/driver/nvidia/version ]; then \
	    $(PYTHON) examples/train.py $(DEMO_ARGS); \
	else \
	    $(BUILD)/bin/elixir-sim $(DEMO_SIM_ARGS) -- $(PYTHON) examples/train.py $(DEMO_ARGS); \
	fi
else
demo: $(SIM_LIB) $(EXAMPLES) $(BUILD)/bin/elixir-sim $(BUILD)/libelixir.so $(BUILD)/bin/elixir-trace
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) bash examples/demo.sh
endif
