#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_res_share_tool.sh - tools/gpu/share (the `share` check of `make gpu-check`) on the
# simulator, with host memory mapped and without: under libelixir.so with a 32 MiB budget on
# a 64 MiB device, another process (sim_other_process_memory here, a second process on a GPU)
# takes all but 16 MiB; the program must exit 0 (every buffer keeps its data, cuMemGetInfo's
# total drops and comes back) and the log must say once that the budget came down to 20 MiB
# (the 4 MiB the job held and the 16 left) and once that it went back up to 32 MiB.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
export ELIXIR_SIM_MEMORY=64M ELIXIR_GPU_MEMORY=32M ELIXIR_LOG=info ELIXIR_STATS=1

for vmm in 1 0; do
    shim_gpu_tool "$vmm" share 32
    [ "$(grep -c 'no GPU memory left within the 32 MiB budget .*the budget is now 20 MiB' \
        "$tmp/o.err")" -eq 1 ] ||
        fail_showing "$tmp/o.err" "the budget's coming down was not reported once"
    [ "$(grep -c 'GPU memory is free again; the budget is back up to 32 MiB' "$tmp/o.err")" \
        -eq 1 ] || fail_showing "$tmp/o.err" "the budget's going back up was not reported once"
    [ "$(shim_stat "$tmp/o.err" "migrations to host")" -gt 0 ] ||
        fail_showing "$tmp/o.err" "nothing was paged out"
done
echo "the budget came down and went back up, with host memory mapped and without"
