# SPDX-License-Identifier: MIT
# Elixir build.  `make` builds everything into build/, `make test` runs the suite,
# `make demo` runs the example training job (on the simulator when no GPU is present).
# V=1 prints full commands; SANITIZE=address,undefined or SANITIZE=thread builds with sanitizers.

CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
CC        ?= cc
PYTHON    ?= python3
SANITIZE  ?=
NVCC      ?= $(CUDA_HOME)/bin/nvcc

.DEFAULT_GOAL := all

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-6s %s\n' $(1) $(2)
endif

WARN     := -Wall -Wextra -Wstrict-prototypes -Wno-unused-parameter -Werror
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 $(WARN) -fvisibility=hidden -fPIC -D_GNU_SOURCE -pthread \
            -I$(CUDA_HOME)/include -Isim/include -MMD -MP
LDFLAGS  += -pthread
# The project's version, in one place (the file VERSION): the tools' --version and the shim's
# ELIXIR_VERBOSE banner print it; the objects that use it are rebuilt when it changes.
ELIXIR_VERSION := $(shell cat VERSION)
CFLAGS   += -DELIXIR_VERSION='"$(ELIXIR_VERSION)"'
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

$(BUILD)/obj/shim/options.o $(BUILD)/obj/tools/trace/main.o $(BUILD)/bin/elixir-sim: VERSION

# ---------------------------------------------------------------- the simulated driver
SIM_SRCS  := $(wildcard sim/*.c)
SIM_OBJS  := $(SIM_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/sim_exports.o
SIM_LIB   := $(BUILD)/sim/libcuda.so.1

# Debian packages and CUDA headers: checked once per build tree (installs them as root).
DEPS_OK := $(BUILD)/.deps-ok
$(DEPS_OK): .ci/deps.sh
	$(Q)CUDA_HOME=$(CUDA_HOME) sh .ci/deps.sh
	$(Q)mkdir -p $(@D) && touch $@

$(BUILD)/gen/sim_exports.c: sim/gen_exports.py $(CUDA_HOME)/include/cuda.h $(CUDA_HOME)/include/cudaTypedefs.h | $(DEPS_OK)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PYTHON) sim/gen_exports.py --cuda-include $(CUDA_HOME)/include --cc "$(CC)" -o $@

$(BUILD)/gen/sim_errors.h: sim/gen_errors.awk $(CUDA_HOME)/include/cuda.h | $(DEPS_OK)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)awk -v enum=CUresult -v prefix=CUDA_ -f sim/gen_errors.awk \
	    $(CUDA_HOME)/include/cuda.h > $@.tmp && mv $@.tmp $@

$(SIM_SRCS:%.c=$(BUILD)/obj/%.o): $(BUILD)/gen/sim_errors.h

$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Isim -I$(BUILD)/gen -c -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Isim -c -o $@ $<

$(SIM_LIB): $(SIM_OBJS) sim/libcuda.map
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,--version-script=sim/libcuda.map \
	    -Wl,-z,defs -o $@ $(SIM_OBJS) $(LDFLAGS) -ldl -lm
	$(Q)ln -sf libcuda.so.1 $(@D)/libcuda.so

# ---------------------------------------------------------------- examples
# examples/examples.mk adds its targets to EXAMPLES (kernels for the simulator, PTX) and `demo`.
EXAMPLES :=
-include examples/examples.mk
-include shim/shim.mk
-include policy/policy.mk
-include tracer/tracer.mk
-include sim/cupti/cupti.mk
-include sim/nccl/nccl.mk
-include tools/trace/trace.mk
-include iouring/iouring.mk

# ---------------------------------------------------------------- command-line tools
TOOL_SRCS := $(wildcard tools/*.c)
TOOLS     := $(TOOL_SRCS:tools/%.c=$(BUILD)/bin/%)
$(BUILD)/bin/%: tools/%.c | $(DEPS_OK)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS)

# elixir-sim checks the ELIXIR_SIM_* values it passes on with the simulator's own parsers.
$(BUILD)/bin/elixir-sim: tools/elixir-sim.c $(BUILD)/obj/sim/simconfig.o
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Isim -o $@ $< $(BUILD)/obj/sim/simconfig.o $(LDFLAGS)

# tools/gpu/*.c: programs for `make gpu-check`, built everywhere (the suite runs them on the
# simulator too), linked against libcuda.so.1 like the tests.
GPU_TOOL_SRCS := $(wildcard tools/gpu/*.c)
GPU_TOOLS     := $(GPU_TOOL_SRCS:tools/gpu/%.c=$(BUILD)/gpu/%)
$(BUILD)/gpu/%: tools/gpu/%.c $(SIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) -ldl
$(BUILD)/gpu/nccl_paging: tools/gpu/nccl_paging.c $(SIM_LIB) $(NCCL_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcuda.so.1 $(LDFLAGS)

# ---------------------------------------------------------------- tests and benchmarks
# Every tests/NAME.c is one test program; tests/lib/*.c is shared helper code linked into each.
TEST_LIB_SRCS := $(wildcard tests/lib/*.c)
TEST_LIB_OBJS := $(TEST_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SRCS := $(filter-out tests/runner.c,$(wildcard tests/*.c))
TESTS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
RUNNER    := $(BUILD)/tests/runner
BENCH_SRCS:= $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

# tests/unit_*.c test internal modules: linked with the simulator's objects, not the library.
$(BUILD)/tests/unit_%: tests/unit_%.c $(SIM_OBJS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Isim -o $@ $< $(SIM_OBJS) $(LDFLAGS) -ldl -lm

$(BUILD)/tests/%: tests/%.c tests/lib/simtest.h $(TEST_LIB_OBJS) $(SIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/lib -rdynamic -o $@ $< $(TEST_LIB_OBJS) -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) -ldl -lm

# tests/preload/NAME.c: shared objects that tests preload beside libelixir.so or open.
TEST_PRELOAD_SRCS := $(wildcard tests/preload/*.c)
TEST_PRELOADS     := $(TEST_PRELOAD_SRCS:tests/preload/%.c=$(BUILD)/tests/preload/%.so)

$(BUILD)/tests/preload/%.so: tests/preload/%.c | $(DEPS_OK)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $< $(LDFLAGS) -ldl

$(RUNNER): tests/runner.c | $(DEPS_OK)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS)

$(BUILD)/bench/%: bench/%.c $(SIM_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/lib -rdynamic -o $@ $< -L$(BUILD)/sim -l:libcuda.so.1 $(LDFLAGS) -ldl -lm

# ---------------------------------------------------------------- top-level targets
ALL := $(SIM_LIB) $(EXAMPLES) $(TOOLS) $(GPU_TOOLS) $(TESTS) $(TEST_PRELOADS) $(RUNNER) \
       $(BENCHES)

.PHONY: all test bench gpu-check deps clean
all: $(ALL)

# The runner reads tests/*.c programs and tests/*.sh scripts from the build and source trees.
# Without V=1 the build before the tests shows a count of the files it built (updated in place
# on a terminal) instead of a line each; anything else the build prints, errors above all,
# shows as it comes.
TEST_ONLY ?=
ifeq ($(V),1)
test: all
else
test:
	@mkdir -p $(BUILD); tty=0; [ -t 1 ] && tty=1; \
	{ $(MAKE) --no-print-directory all 2>&1; echo $$? >$(BUILD)/.build-status; } | \
	awk -v tty=$$tty 'function count() { printf "  built %d file%s", n, n == 1 ? "" : "s" } \
	    /^  [A-Z]+ +[^ ]+$$/ { n++; if (tty) { printf "\r"; count(); open = 1; fflush() } next } \
	    /^make\[[0-9]+\]: Nothing to be done/ { next } \
	    { if (open) printf "\n"; open = 0; print; fflush() } \
	    END { if (open || n) { if (!open) count(); printf "\n" } }'; \
	exit $$(cat $(BUILD)/.build-status)
endif
	$(Q)BUILD=$(BUILD) SANITIZE=$(SANITIZE) $(RUNNER) $(TEST_ONLY)

# A bench program with a script of its name (bench/NAME.sh) is run by that script only.
bench: all
	$(Q)for b in $(BENCHES); do [ -e bench/$${b##*/}.sh ] || \
	    LD_LIBRARY_PATH=$(BUILD)/sim $$b || exit 1; done
	$(Q)for s in bench/*.sh; do BUILD=$(BUILD) PYTHON=$(PYTHON) bash $$s || exit 1; done

# The checks that need an NVIDIA GPU and its driver (tools/gpu/check.sh): outputs in
# GPU_CHECK_OUT; GPU_CHECKS picks some of train,policy,trace,share,nccl,torch,bench,nvme,sim.
GPU_CHECK_OUT ?= $(BUILD)/gpu-check
GPU_CHECKS    ?=
gpu-check: all
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) CUDA_HOME=$(CUDA_HOME) bash tools/gpu/check.sh \
	    $(if $(GPU_CHECKS),-k $(GPU_CHECKS)) $(GPU_CHECK_OUT)

deps:
	$(Q)CUDA_HOME=$(CUDA_HOME) sh .ci/deps.sh

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
