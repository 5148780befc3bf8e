#!/bin/bash
# SPDX-License-Identifier: MIT
# train_small.sh - examples/train.py --preset small trains on the simulator (loss falls) in both
# allocation modes with the same digest, and no race is reported.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
train_allocs_agree small 12
