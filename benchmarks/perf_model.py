"""The performance model of docs/performance.md ("A model for many GPUs"): prints its table.

Round trip of a distributed N^3 complex64 FFT on P GPUs, per direction:

    t = t_fft(N^3 / P) + sum over exchanges of [t_pack + bytes_sent / link bandwidth]

* t_fft: the local FFTs, scaled from one measured GPU figure (H100, jax 0.11.2, docs/native.md:
  jnp fftn+ifftn round trip of 512^3 complex64 = 5.97 ms, so 2.99 ms per direction) by
  elements x log2(N^3), assuming the local work divides evenly over P GPUs.
* exchanges: a slab has one all-to-all per direction over all P GPUs; a pencil (pr x pc) has
  two, over groups of pr and pc. A GPU sends (1 - 1/g) of its block in a group of g.
* links: NVLink 4 (~450 GB/s per direction per GPU) inside a node of 8 GPUs, InfiniBand NDR
  (~50 GB/s per GPU) between nodes; the part of an exchange that leaves the node and the part
  that stays run at the same time, so the slower one counts.
* t_pack: the pack and unpack around an exchange, one read+write pass each over the block at
  ~3.0 TB/s (cudaMemcpy on an H100, tools/gpu_rig/README.md).

Nothing here is measured on several GPUs; it is arithmetic on the figures above.
"""
from __future__ import annotations

import argparse
import math

T_FFT_512_PER_DIR = 5.97e-3 / 2  # s, one H100, 512^3 c64 (docs/native.md)
NVLINK = 450e9                     # B/s per direction per GPU (NVLink 4)
IB = 50e9                          # B/s per GPU (InfiniBand NDR, 400 Gb/s)
HBM = 3.0e12                       # B/s, measured cudaMemcpy on an H100
GPUS_PER_NODE = 8
ITEM = 8                           # complex64


def t_fft(n: int, p: int) -> float:
    scale = (n ** 3 / 512 ** 3) * (math.log2(n ** 3) / math.log2(512 ** 3))
    return T_FFT_512_PER_DIR * scale / p


def t_exchange(block_bytes: float, group: int, local: int) -> float:
    """One all-to-all in a group of `group` GPUs of which `local` share a node."""
    if group == 1:
        return 0.0
    intra = block_bytes * (local - 1) / group
    inter = block_bytes * (group - local) / group
    pack = 2 * 2 * block_bytes / HBM
    return pack + max(intra / NVLINK, inter / IB if inter else 0.0)


def pencil_dims(p: int) -> tuple[int, int]:
    pr = int(math.isqrt(p))
    while p % pr:
        pr -= 1
    return pr, p // pr  # pc >= pr: the minor (intra-node first) axis


def model(n: int, p: int, kind: str) -> dict:
    block = n ** 3 * ITEM / p
    local = min(p, GPUS_PER_NODE)
    fft = t_fft(n, p)
    if kind == "slab":
        comm = t_exchange(block, p, local)
    else:
        pr, pc = pencil_dims(p)
        in_node = min(pc, GPUS_PER_NODE)  # the minor axis packs a node first
        comm = t_exchange(block, pc, in_node) + t_exchange(block, pr, 1 if pc >= 8 else min(
            pr, GPUS_PER_NODE // pc))
    return {"fft": fft, "comm": comm, "total": fft + comm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2048)
    args = parser.parse_args()
    print(f"N={args.n} complex64, per direction (ms): local FFT + exchanges = total")
    print(f"{'GPUs':>5s} {'slab fft':>9s} {'comm':>7s} {'total':>7s}   "
          f"{'pencil':>7s} {'fft':>7s} {'comm':>7s} {'total':>7s}")
    for p in (8, 16, 32, 64, 128, 256, 512):
        s, q = model(args.n, p, "slab"), model(args.n, p, "pencil")
        pr, pc = pencil_dims(p)
        print(f"{p:5d} {s['fft'] * 1e3:9.1f} {s['comm'] * 1e3:7.1f} {s['total'] * 1e3:7.1f}   "
              f"{pr:>3d}x{pc:<3d} {q['fft'] * 1e3:7.1f} {q['comm'] * 1e3:7.1f} "
              f"{q['total'] * 1e3:7.1f}")


if __name__ == "__main__":
    main()
