"""Writes tuning variants for a sweep on the GPU machine: each `DIR/tune-NAME/` is a complete
`RFFI_KERNELS_TUNE_DIR` (the built-in `kernels/tune/cuda/*.json` with one key changed) plus a file
`ONLY` naming the parts of `bench/gpu/shapes.py` it concerns. `kernels/tests/gpu/run.sh` runs the
suite's parts and their GPU tests once more per variant, so one device run compares the defaults
with the alternatives and checks the alternatives against torch.

    python3 bench/gpu/variants.py .devkern                          # every variant
    python3 bench/gpu/variants.py .devkern norm-tile argmax-key       # only these
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TUNE = os.path.join(ROOT, "kernels", "tune", "cuda")

# name: (parts of the suite, key, the key's configs in sm_90.json, which decide the key); in
# order of interest (a run short of time leaves the last out).
SOFTMAX = json.load(open(os.path.join(TUNE, "sm_90.json")))["softmax"]
REDUCE = json.load(open(os.path.join(TUNE, "default.json")))["reduce"][0]
REDUCE_90 = json.load(open(os.path.join(TUNE, "sm_90.json")))["reduce"][0]


def softmax_with(**params):
    """The built-in softmax configs with `params` set in every entry."""
    out = []
    for c in SOFTMAX:
        c = json.loads(json.dumps(c))
        (c["set"] if "gen" in c else c).update(params)
        out.append(c)
    return out


NORM = json.load(open(os.path.join(TUNE, "sm_90.json")))["norm"]


def norm_16bit(**params):
    """The built-in norm configs with `params` set in the entry for 16-bit types."""
    return [dict(c, **params) if c.get("when") == "itemsize == 2" else c for c in NORM]


ELEMENTWISE = json.load(open(os.path.join(TUNE, "default.json")))["elementwise"]
ELEMENTWISE_90 = json.load(open(os.path.join(TUNE, "sm_90.json")))["elementwise"]

VARIANTS = {
    # Packed unary kernels with 4 packs a thread per step instead of 8.
    "unary-packs-4": (
        "elementwise",
        "elementwise",
        [dict(c, unary_packs=4) for c in ELEMENTWISE],
    ),
    # Softmax tiles of 32 KiB with 256 threads instead of 16 KiB with 128.
    "softmax-tiles-32k": ("softmax", "softmax", softmax_with(tile_bytes=32768)),
    # Tiles of as many rows as fit, without rounding to whole rounds of the block's rows.
    "softmax-no-round": ("softmax", "softmax", softmax_with(tile_round=0)),
    # Short rows without the shared-memory tiles: the lane-per-row and warp-per-row variants.
    "softmax-no-tiles": ("softmax", "softmax", softmax_with(tile_max=0)),
    # The tiles for every row length up to 1024 (the configs stop at 128, and float32 rows of
    # 16 to 64 go without them).
    "softmax-tiles-1024": ("softmax", "softmax", softmax_with(tile_max=1024)),
    # Column reductions a thread per pack of outputs (no row slices merged in shared memory).
    "reduce-cols-vec": ("reductions", "reduce", [dict(REDUCE, cols_tile=0)]),
    # Softmax tiles computed in quads of 4 elements (softmax_tileq_G_N: 8-byte shared accesses
    # for 16-bit types, int indices, one NaN-propagating max an element), 8 / 16 / 32 elements a
    # lane, for rows of a multiple of 4 elements that the tiles take.
    "softmax-tileq-8": ("softmax", "softmax", softmax_with(tile_quads=1, tile_quad_elems=8)),
    "softmax-tileq-16": ("softmax", "softmax", softmax_with(tile_quads=1, tile_quad_elems=16)),
    "softmax-tileq-32": ("softmax", "softmax", softmax_with(tile_quads=1, tile_quad_elems=32)),
    # Normalization rows of 64 to 1024 aligned packs through norm_tile: several rows a block of
    # 8 warps, the next rows prefetched into shared memory (cp.async) while these are computed,
    # weight and bias in registers once per block; 2 or 3 blocks an SM.
    "norm-tile": ("norms", "norm", [dict(c, tile=1) for c in NORM]),
    "norm-tile-3": ("norms", "norm", [dict(c, tile=1, tile_blocks_per_sm=3) for c in NORM]),
    # argmax of 16-bit rows by one unsigned key an element (argmax_rows_key8), and by a running
    # maximum a lane on words, searched only where a step's maximum beats it (argmax_rows_run8).
    "argmax-key": ("reductions", "reduce", [dict(REDUCE, argmax_key=1)]),
    "argmax-run": ("reductions", "reduce", [dict(REDUCE_90, argmax_key=2)]),
    # Chunked reductions (a full sum, few long rows) in one launch: the last block to finish a
    # chunk of an output combines the output's chunks (single_pass), no combine kernel.
    "reduce-single-pass": ("reductions", "reduce", [dict(REDUCE_90, single_pass=1)]),
    # Rows staged whole in shared memory (softmax_smem): never (the register, online and split
    # variants, as before it), with 1024 threads a row instead of 512, and from 4096 elements
    # on instead of 16384.
    "softmax-smem-off": ("softmax", "softmax", softmax_with(smem_cols=1 << 40)),
    "softmax-smem-1024": ("softmax", "softmax", softmax_with(smem_threads=1024)),
    "softmax-smem-4096": ("softmax", "softmax", softmax_with(smem_cols=4096)),
    # Rows a warp or a lane group each (float32 rows of 16 to 256) from at most 8 blocks of 256
    # threads an SM walking rows grid-stride, instead of a block per 8 to 256 rows.
    "softmax-group-capped": ("softmax", "softmax", softmax_with(group_blocks_per_sm=8)),
    # Rows longer than a block's shared memory staged over a cluster of 2 to 8 blocks
    # (softmax_cluster_CN, sm_90), instead of read twice by the online variant.
    "softmax-cluster": ("softmax", "softmax", softmax_with(cluster=1)),
    # Rows whose chunks over a cluster of 8 outgrow what two blocks an SM stage (float32 rows of
    # 262144: 128 KiB a block) staged in part, the rest read from L2 in each pass, instead of
    # read twice by the online variant.
    "softmax-cluster-part": ("softmax", "softmax", softmax_with(cluster=1, cluster_part=1)),
    # The 32-bit strided kernels with four elements a thread a round, all loaded before any is
    # stored (strided32, strided_rounds 4).
    "strided-rounds-4": (
        "elementwise",
        "elementwise",
        [dict(c, strided_rounds=4) for c in ELEMENTWISE],
    ),
    # Elementwise blocks of 128 threads instead of 256: half the work a block, so the last
    # partial wave of a packed kernel is half as long (exp of 128 MiB: 0.90 of copy, torch 0.95).
    "ew-threads-128": (
        "elementwise",
        "elementwise",
        [dict(c, threads=128) for c in ELEMENTWISE],
    ),
    # The prefetching norm tiles (16-bit rows of 512 to 8192) with three stages instead of two:
    # the next two passes in flight, 48 KiB of dynamic shared memory a block.
    "norm-tile3": ("norms", "norm", [dict(c, tile_stages=3) for c in NORM]),
    # Normalization rows that one block holds only with more than 512 threads (bfloat16 rows
    # of 32768 and 65536, float32 of 65536) over a cluster of 2 to 8 blocks of 4 packs a thread
    # (norm_cluster_CN, sm_90).
    "norm-cluster": ("norms", "norm", [dict(c, cluster=1) for c in NORM]),
    # Normalization rows off their weight's alignment (odd lengths such as 4097: rows at every
    # phase) with weight and bias read as 16-byte packs shifted to x's phase (norm_block_shift_PK)
    # instead of element by element.
    "norm-weight-shift": ("norms", "norm", [dict(c, weight_shift=1) for c in NORM]),
    # Aligned rows of 8 to 128 packs with fewer than 2 (4) packs a lane in a warp: G lanes a
    # row and 32 / G rows a warp (softmax_lanes_G_N), about 2 (4) packs a lane in flight instead
    # of one (16-bit rows of 256: a warp a row, 0.80-0.84 of copy; float32 rows of 32: 8 lanes
    # of 4 elements, 0.78).
    "softmax-lanes-2": ("softmax", "softmax", softmax_with(lane_packs=2)),
    "softmax-lanes-4": ("softmax", "softmax", softmax_with(lane_packs=4)),
    # Reductions split over few outputs (the full sum of 256 MiB of float32: 0.88 of copy) in
    # one wave of blocks: 2 blocks of 512 threads an SM (52 registers a thread: two fit), or one
    # of 1024, instead of two waves of 2.
    "reduce-one-wave": ("reductions", "reduce", [dict(REDUCE_90, blocks_per_sm=2)]),
    "reduce-1024": ("reductions", "reduce", [dict(REDUCE_90, blocks_per_sm=1, threads=1024)]),
    # The same in four or eight waves of 2 (smaller chunks: the SMs that finish first take more).
    "reduce-waves-4": ("reductions", "reduce", [dict(REDUCE_90, blocks_per_sm=8)]),
    "reduce-waves-8": ("reductions", "reduce", [dict(REDUCE_90, blocks_per_sm=16)]),
    # The block-per-output rows walk with the next 4 packs a thread loaded before a step's 4 are
    # merged (the full sum, rows of more than group_max elements): the plain loop's machine code
    # issues two loads, merges them, then the other two.
    "reduce-packs-8": ("reductions", "reduce", [dict(REDUCE_90, rows_packs=8)]),
    # The norm tiles (16-bit rows of 512 to 8192) with weight and bias read from L1 each pass
    # instead of held in registers (108-112 registers, two blocks an SM): three blocks an SM
    # (76-78 registers) or four (64, a few spilled).
    "norm-tile-l1-3": ("norms", "norm", [dict(c, tile_l1=3) for c in NORM]),
    "norm-tile-l1-4": ("norms", "norm", [dict(c, tile_l1=4) for c in NORM]),
    # Packed unary kernels with one pack a thread, a block per 256 (128) packs, instead of 8
    # packs a thread per step (exp: 0.90-0.93 of copy, 0.96x torch).
    "unary-packs-1": (
        "elementwise",
        "elementwise",
        [dict(c, unary_packs=1) for c in ELEMENTWISE_90],
    ),
    "unary-packs-1-128": (
        "elementwise",
        "elementwise",
        [dict(c, unary_packs=1, threads=128) for c in ELEMENTWISE_90],
    ),
    # One-pass reductions with their counters and partials in memory kept for the stream's
    # next call (no allocation, no memset a call).
    "reduce-kept-scratch": ("reductions", "reduce", [dict(REDUCE_90, kept_scratch=1)]),
    # Transposed operands' tiles with the next tile's loads issued before this tile's stores
    # (H200 a.T + b.T: 0.81 of copy).
    "tiled-prefetch": (
        "elementwise",
        "elementwise",
        [dict(c, tiled_prefetch=1) for c in ELEMENTWISE_90],
    ),
    # The 32-bit strided kernels' four elements a thread a round from a tile of 4 x threads
    # consecutive elements a block (strided_tile), instead of a grid's width apart: a block's
    # loads in one stretch of the tensor; with the grid capped at 8 blocks an SM, or a block
    # per tile (no cap).
    "strided-tile": (
        "elementwise",
        "elementwise",
        [dict(c, strided_tile=1) for c in ELEMENTWISE_90],
    ),
    "strided-tile-nocap": (
        "elementwise",
        "elementwise",
        [dict(c, strided_tile=1, blocks_per_sm=0) for c in ELEMENTWISE_90],
    ),
    # Rows read every element or every second one (x[..., ::2], x[..., 1::2]) in halves of
    # packs (NAME_halves: 16-byte loads of the packs that hold a unit's elements, 8-byte
    # stores), instead of element by element.
    "strided-halves": (
        "elementwise",
        "elementwise",
        [dict(c, halves=1) for c in ELEMENTWISE_90],
    ),
    # 16-bit normalization rows of 512 to 8192 by the block variant, not the prefetching tiles
    # (chosen on an H200; on an H100 rms_norm of bfloat16 65536 x 1024 was 0.99x torch).
    "norm-tile-off": ("norms", "norm", [dict(c, tile=0) for c in NORM]),
    # Softmax rows longer than a block's shared memory read twice (the online variant), not
    # staged over a cluster (chosen on an H200; float32 rows of 128256 at 0.71 of copy on an H100).
    "softmax-cluster-off": ("softmax", "softmax", softmax_with(cluster=0, cluster_part=0)),
    # Long contiguous rows (16384 elements on) pipelined through registers on a persistent grid
    # (softmax_pipe_CN: a block's chunk in registers while its next row's arrives in shared
    # memory), instead of staged, split or read twice; with blocks of at most 512 threads (more
    # blocks a row, two an SM).
    "softmax-pipe": ("softmax", "softmax", softmax_with(pipe=1)),
    "softmax-pipe-512": ("softmax", "softmax", softmax_with(pipe=1, pipe_threads=512)),
    # Normalization rows of 16384 elements on (aligned, whole packs, weight and bias packs)
    # pipelined through registers on a persistent grid (NAME_pipe_CN), instead of a block or a
    # cluster a row; from 4096 on (instead of the 16-bit tiles and the block variant); from
    # 65536 on (where a block a row is one an SM).
    "norm-pipe": ("norms", "norm", [dict(c, pipe=1) for c in NORM]),
    "norm-pipe-4k": ("norms", "norm", [dict(c, pipe=1, pipe_cols=4096) for c in NORM]),
    "norm-pipe-64k": ("norms", "norm", [dict(c, pipe=1, pipe_cols=65536) for c in NORM]),
    # The built-in configs before the pipelined rows were adopted: for comparison in one run.
    "softmax-pipe-off": ("softmax", "softmax", softmax_with(pipe=0)),
    "norm-pipe-off": ("norms", "norm", [dict(c, pipe=0) for c in NORM]),
    # 16-bit normalization rows of 64 to 1024 aligned packs by the block variant at 4 packs a
    # thread instead of the prefetching tiles; with rows of up to 128 packs a block a row too,
    # not a warp (warp_packs 0).
    "norm-block-4": ("norms", "norm", norm_16bit(tile=0, packs=4)),
    "norm-block-4-nowarp": ("norms", "norm", norm_16bit(tile=0, packs=4, warp_packs=0)),
    # 16-bit rows at any alignment phase (4097) with weight and bias read as packs shifted to
    # x's phase (norm_block_shift_PK), at the built-in 4 packs a thread.
    "norm-shift": ("norms", "norm", norm_16bit(weight_shift=1)),
    # 16-bit normalization rows with one pack a thread (twice the threads a row).
    "norm-packs-1": ("norms", "norm", [dict(c, packs=1) if "when" not in c else c for c in NORM]),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out, wanted = sys.argv[1], sys.argv[2:]
    unknown = [n for n in wanted if n not in VARIANTS]
    if unknown:
        sys.exit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    for name, (only, key, configs) in VARIANTS.items():
        if wanted and name not in wanted:
            continue
        d = os.path.join(out, f"tune-{name}", "cuda")
        os.makedirs(d, exist_ok=True)
        for f in ("default.json", "sm_90.json"):
            with open(os.path.join(TUNE, f)) as fh:
                table = json.load(fh)
            if f == "sm_90.json":
                table[key] = configs  # the arch layer comes first: it decides the key
            with open(os.path.join(d, f), "w") as fh:
                json.dump(table, fh, indent=1)
        with open(os.path.join(out, f"tune-{name}", "ONLY"), "w") as fh:
            fh.write(only + "\n")
        print(f"tune-{name}: {only}")


if __name__ == "__main__":
    sys.exit(main())
