# SPDX-License-Identifier: MIT
# iouring/iouring.mk - included by the Makefile: the NVMe tier (swap area, slots, io_uring and
# pread/pwrite engines, CRC32C) archived into $(NVME_LIB), for the shim and the tests to link;
# whatever links it needs $(NVME_LDLIBS) (liburing, libdl for the clock hook's dlsym).
# Explicit rules here win over the Makefile's generic ones:
#   tests/unit_nvme_*   the tier's library and nothing else (no simulator);
#   bench/nvme_tier     the same (bench/nvme_fio.sh runs it beside fio).

NVME_SRCS   := $(wildcard iouring/*.c)
NVME_OBJS   := $(NVME_SRCS:%.c=$(BUILD)/obj/%.o)
NVME_LIB    := $(BUILD)/iouring/libelixirnvme.a
NVME_LDLIBS := -luring -ldl
NVME_TESTS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit_nvme_*.c))

$(NVME_LIB): $(NVME_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $(NVME_OBJS)

all: $(NVME_LIB)

$(NVME_TESTS): $(BUILD)/tests/%: tests/%.c tests/nvme_test.h $(NVME_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Iiouring -rdynamic -o $@ $< $(NVME_LIB) $(LDFLAGS) $(NVME_LDLIBS)

$(BUILD)/bench/nvme_tier: bench/nvme_tier.c $(NVME_LIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Iiouring -o $@ $< $(NVME_LIB) $(LDFLAGS) $(NVME_LDLIBS) -lm
