#!/bin/bash
# SPDX-License-Identifier: MIT
# train_alloc.sh - examples/train.py --preset tiny on the simulator, once with one cuMemAlloc per
# tensor and once through its caching allocator: both learn, race nothing, and agree bit for bit
# (same losses, same digest).
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
train_allocs_agree tiny 12
