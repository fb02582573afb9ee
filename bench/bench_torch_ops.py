"""Overhead of the PyTorch operator path: torch.ops.jitgemm.mm (custom-op dispatch + DLPack) and a
torch.compile'd call beside jitgemm.matmul on numpy arrays (the same kernel in the emulator), and torch's own
CPU matmul for scale; then the host-side cost alone (the launch stubbed out). Side by side with ratios; warm
kernel cache (the first call compiles); best of --repeat.

    python bench/bench_torch_ops.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import time


def _best(repeat: int, fn, *args) -> float:
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def _row(repeat: int, m: int, n: int, k: int):
    """(matmul on numpy, torch.ops.jitgemm.mm, compiled op, torch.mm) seconds for one shape."""
    import torch

    import jitgemm

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    compiled = torch.compile(torch.ops.jitgemm.mm, fullgraph=True, backend="aot_eager")
    return (_best(repeat, jitgemm.matmul, x.numpy(), w.numpy()), _best(repeat, torch.ops.jitgemm.mm, x, w),
            _best(repeat, compiled, x, w), _best(repeat, torch.mm, x, w))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per row (the best is shown)")
    args = parser.parse_args()
    import jitgemm.torch  # noqa: F401
    from jitgemm import api

    print(f"{'M x N x K':>10} {'matmul(numpy) ms':>17} {'ops.jitgemm.mm ms':>18} {'ratio':>6} "
          f"{'compiled ms':>12} {'ratio':>6} {'torch.mm ms':>12}")
    for m, n, k in ((16, 16, 16), (32, 32, 64), (64, 64, 64)):
        direct, op, comp, ref = _row(args.repeat, m, n, k)
        print(f"{f'{m}x{n}x{k}':>10} {direct * 1e3:17.3f} {op * 1e3:18.3f} {op / direct:6.2f} {comp * 1e3:12.3f} "
              f"{comp / direct:6.2f} {ref * 1e3:12.4f}")
    # host side alone: argument checks, the memoized selector, DLPack, the custom-op dispatch
    real = api.launch
    api.launch = lambda call, *a, **kw: call.d
    try:
        print(f"\nlaunch stubbed out (us) {'M x N x K':>10} {'matmul(numpy)':>14} {'ops.jitgemm.mm':>15} "
              f"{'compiled':>9}")
        for m, n, k in ((16, 16, 16), (64, 64, 64)):
            direct, op, comp, _ = _row(args.repeat * 10, m, n, k)
            print(f"{'':>24}{f'{m}x{n}x{k}':>10} {direct * 1e6:14.1f} {op * 1e6:15.1f} {comp * 1e6:9.1f}")
    finally:
        api.launch = real


if __name__ == "__main__":
    main()
