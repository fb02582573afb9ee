"""The one timing model: a predicted time for any GEMM code object with a contract (ours, Triton's, aiter's, GFA's)
on any device of its target, for the selector, the sweep, `explain`, `tune`, split-K decisions and `jitgemm profile`.

What it models:
- the kernel's own instructions (`trace`): the code is split at its main loop (the backward branch around the most
  MFMAs) into prologue, one loop iteration and epilogue; each region's instructions by class, MFMA passes and flops,
  bytes per wave through vector memory and LDS, and the time one wave alone takes to issue it in order with the
  profile's issue rates, MFMA passes and result latencies (`pipeline`, grown from the main loop to all three
  regions); the loop runs ceil(K_slice / K per iteration) times, K per iteration read from the loop's MFMA flops and
  the macro tile (static extrapolation: GEMM main loops are regular);
- waves sharing a SIMD (occupancy from the unified VGPR file, LDS and waves per SIMD), the matrix pipe they share,
  the CU's L2 and LDS ports (bytes per clock);
- workgroup rounds over all CUs (wave quantization), dispatched in id order round-robin over the XCDs; the distinct
  A and B tiles each XCD's L2 fetches per round (reuse from the tile order), from the Infinity Cache (MALL), and from
  HBM once when A and B fit the MALL, else every L2 fill; split-K slices' partial results (read-modify-write);
- partial tiles: an edge tile's rows past M (columns past N) and the K past the end of the last split-K slice load
  nothing, so the L2 fills count only the bytes really read, and so do the loop's L2 bytes when every tile is an
  edge one (M or N below one tile); a last split-K slice holding less K (or none) runs fewer iterations, so a
  dispatch round of such workgroups alone is shorter;
- a launch overhead.
Every parameter lives in the target profile (`pipeline`, `timing`, `devices`) with its source; four are fitted to
aiter's measured tables on a declared half of the rows (bench/bench_model.py reports the other half).

- when asked (`emu_counters`, `jitgemm profile --emulate`), LDS bank conflicts and 64-byte global transactions from
  the lanes' real addresses: one macro tile run in the emulator at two K depths, differenced to one iteration.

What it ignores: paths of the code a launch does not take (a static trace counts every branch of the prologue and
epilogue once, so an edge tile is timed with the interior instructions -- the kernels compute whole tiles -- and
only its bytes differ), LDS bank conflicts and uncoalesced global accesses unless measured (the selector does not
emulate: seconds a candidate), instruction-cache misses, power throttling beyond one fitted sustained-clock factor,
other kernels' traffic, TLB misses, the instruction stream's per-PC counts from the emulator (the loop count is
extrapolated statically from K; GEMM main loops are regular).
"""

from __future__ import annotations

from .model import KernelFacts, Prediction, TimingError, best_split, kernel_facts, occupancy, params, predict
from .trace import KernelTrace, Region, trace

__all__ = ["KernelFacts", "KernelTrace", "Prediction", "Region", "TimingError", "best_split", "kernel_facts",
           "occupancy",
           "params", "predict", "trace"]
