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

# `make demo`: the demo preset on the GPU when an NVIDIA driver is loaded, else on the simulator
# with a device large enough to hold it (DEMO_SIM_ARGS).  `make demo ELIXIR=1` runs it under
# libelixir.so instead, on the simulator's default 1 GiB device (or the GPU), over four times
# smaller than the job.
DEMO_ARGS     ?= --preset demo
ifeq ($(ELIXIR),1)
DEMO_SIM_ARGS ?=
DEMO_ENV      := LD_PRELOAD=$(abspath $(BUILD))/libelixir.so ELIXIR_STATS=1
else
DEMO_SIM_ARGS ?= --memory 6G
DEMO_ENV      :=
endif
.PHONY: demo
demo: $(SIM_LIB) $(EXAMPLES) $(BUILD)/bin/elixir-sim $(if $(filter 1,$(ELIXIR)),$(BUILD)/libelixir.so)
	$(Q)if [ -e /proc/driver/nvidia/version ]; then \
	    $(DEMO_ENV) $(PYTHON) examples/train.py $(DEMO_ARGS); \
	else \
	    $(DEMO_ENV) $(BUILD)/bin/elixir-sim $(DEMO_SIM_ARGS) -- $(PYTHON) examples/train.py $(DEMO_ARGS); \
	fi
