#!/bin/bash
# SPDX-License-Identifier: MIT
# train_allocator.sh - the caching allocator of examples/train.py (--alloc pooled) on a fake
# driver: random allocations and frees never overlap, stay inside their segments, reuse cached
# blocks, follow the small/large pool rules, and coalesce back into whole segments.
set -u
PYTHONDONTWRITEBYTECODE=1 "${PYTHON:-python3}" - <<'PY'
import random, sys
sys.path.insert(0, "examples")
import train

class FakeDriver:
    def __init__(self):
        self.next, self.segments, self.calls = 1 << 40, {}, 0
    def __call__(self, name, *args):
        self.calls += 1
        if name == "cuMemAlloc_v2":
            ptr, size = args
            ptr._obj.value = self.next
            self.segments[self.next] = size
            self.next += size + (1 << 30)
        elif name == "cuMemFree_v2":
            del self.segments[args[0]]
        else:
            raise AssertionError(name)

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

drv = FakeDriver()
A = train.CachingAllocator(drv)
rng = random.Random(7)
live = {}
for i in range(4000):
    if live and rng.random() < 0.45:
        ptr = rng.choice(list(live))
        A.free(ptr)
        del live[ptr]
    else:
        n = rng.choice([rng.randrange(1, 4096), rng.randrange(1, 3 << 20), rng.randrange(1, 40 << 20)])
        ptr = A.alloc(n)
        if ptr % 512:
            fail("block %#x not 512-byte aligned" % ptr)
        seg = [s for s in drv.segments if s <= ptr < s + drv.segments[s]]
        if len(seg) != 1 or ptr + n > seg[0] + drv.segments[seg[0]]:
            fail("block %#x+%d outside its segment" % (ptr, n))
        small_seg = drv.segments[seg[0]] == A.SMALL_SEGMENT
        if (n <= A.SMALL) != small_seg:
            fail("request of %d bytes served from a %d-byte segment" % (n, drv.segments[seg[0]]))
        live[ptr] = n
    spans = sorted(live.items())
    for (a, n), (b, _) in zip(spans, spans[1:]):
        if a + n > b:
            fail("blocks %#x+%d and %#x overlap" % (a, n, b))
allocs = sum(1 for _ in drv.segments)
for ptr in list(live):
    A.free(ptr)
whole = sorted((b.ptr, b.size) for pool in A.free_blocks.values() for b in pool)
if whole != sorted(drv.segments.items()):
    fail("free blocks did not coalesce into whole segments")
if allocs > 200:
    fail("%d segments for 4000 requests: cached blocks are not reused" % allocs)
if A.current != 0:
    fail("%d bytes still counted in use" % A.current)
A.release()
if drv.segments:
    fail("segments left after release")
print("ok: %d segments served the run" % allocs)
PY
