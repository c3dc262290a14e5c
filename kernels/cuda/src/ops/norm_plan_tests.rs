//! The normalization variant each row class gets on an H200 (132 SMs, sm_90) with the built-in
//! tuning files and with the configs that set its candidates. No GPU needed.

use super::plan_tests::{config_table, table, SMEM, SMS};
use super::{norm, Tuned};
use rffi_kernels::{Op, TuneView};

/// Rows of a normalization: `aligned` whole 16-byte packs, else contiguous at one alignment
/// phase where the length is not whole packs; weight and bias packs; back to back on an sm_90.
fn norm_rows(rows: i64, len: i64, vec: i64, aligned: bool) -> norm::Class {
    norm::Class {
        rows,
        len,
        vec,
        aligned_rows: aligned,
        contiguous: aligned || len % vec != 0,
        wvec: true,
        wcontig: true,
        clusters: true,
        packed: true,
        smem_block: SMEM,
    }
}

#[test]
fn norm_variant_per_row_length() {
    let t = table();
    let view = TuneView::new(&t, Some("sm_90"));
    let np = |len: i64, vec: i64, aligned: bool| {
        let vars = [("cols", len), ("itemsize", 16 / vec)];
        let tuned = Tuned::select(&view, "norm", &vars).unwrap();
        let c = norm_rows(4096, len, vec, aligned);
        let (_, l, _) = norm::plan(Op::LayerNorm, &c, SMS, &tuned);
        format!("{} {}", l.kernel, l.block)
    };
    // Rows in a block: 4 packs a thread; 16-bit rows of more than 32 packs too (a warp a row
    // up to 32, sm_90.json's warp_packs), float32 rows of more than 128.
    assert_eq!(np(256, 8, true), "layer_norm_warp_1 256");
    assert_eq!(np(1024, 8, true), "layer_norm_block_4 32");
    assert_eq!(np(4096, 8, true), "layer_norm_block_4 128");
    assert_eq!(np(8192, 8, true), "layer_norm_block_4 256");
    assert_eq!(np(512, 4, true), "layer_norm_warp_4 256");
    assert_eq!(np(4096, 4, true), "layer_norm_block_4 256");
    assert_eq!(np(16384, 8, true), "layer_norm_block_4 512");
    assert_eq!(np(16384, 4, true), "layer_norm_block_8 512");
    // Rows of 65536 on, back to back: pipelined through registers (16-bit: a block of 1024
    // threads a row, float32 a cluster of 2); shorter float32 rows longer than a block's
    // registers at 512 threads over a cluster (49152: 8 blocks of 384 threads).
    assert_eq!(np(65536, 8, true), "layer_norm_pipe_1 1024");
    assert_eq!(np(65536, 4, true), "layer_norm_pipe_2 1024");
    assert_eq!(np(49152, 4, true), "layer_norm_cluster_8 384");
    // Odd lengths, contiguous: packs after peeling, in registers.
    assert_eq!(np(4097, 8, false), "layer_norm_block_any_4 128");
    assert_eq!(np(4097, 4, false), "layer_norm_block_any_4 256");
    // Strided or differently aligned rows: the generic two-read block.
    assert_eq!(np(4096, 4, false), "layer_norm_rows 512");
}

#[test]
fn norm_rows_pipelined_where_a_config_asks() {
    let t = config_table(r#"{"norm": [{"pipe": 1, "pipe_cols": 4096}]}"#);
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "norm", &[]).unwrap();
    let class = |rows, len, vec| norm_rows(rows, len, vec, len % vec == 0);
    // (rows, len, elements a pack) -> kernel, threads, shared bytes a block: the fewest blocks a
    // row of which each holds its chunk at 8 packs a thread (x's own packs: a bfloat16 row of
    // 65536 in one block), at most 1024 threads; the plan's grid is every row's blocks.
    let cases = [
        (32768, 4096, 8, "rms_norm_pipe_1", 64, 512 * 16, 1),
        (4096, 65536, 8, "rms_norm_pipe_1", 1024, 8192 * 16, 1),
        (2048, 65536, 4, "rms_norm_pipe_2", 1024, 8192 * 16, 2),
        (1024, 131072, 4, "rms_norm_pipe_4", 1024, 8192 * 16, 4),
    ];
    for (rows, len, vec, kernel, threads, shared, cn) in cases {
        let (kind, l, why) = norm::plan(Op::RmsNorm, &class(rows, len, vec), SMS, &tuned);
        assert_eq!(
            (l.kernel, l.block, kind, l.grid.0 as i64),
            (
                kernel,
                threads,
                norm::Kind::Pipe(cn, shared),
                rows * cn as i64
            ),
            "{rows} x {len}"
        );
        assert!(why.contains("persistent grid"), "{why}");
    }
    // Rows not back to back or not whole aligned packs, too few to give every SM a block,
    // shorter than `pipe_cols`, float64, or longer than 8 blocks of 1024 threads hold: not
    // pipelined.
    let other = |c: norm::Class| norm::plan(Op::LayerNorm, &c, SMS, &tuned).1.kernel;
    let strided = norm::Class {
        packed: false,
        ..class(4096, 65536, 8)
    };
    assert_eq!(other(strided), "layer_norm_block_8");
    let odd = norm::Class {
        aligned_rows: false,
        ..class(4096, 4097, 8)
    };
    assert_eq!(other(odd), "layer_norm_block_any_2");
    assert_eq!(other(class(64, 65536, 8)), "layer_norm_block_8");
    assert_eq!(other(class(4096, 2048, 8)), "layer_norm_block_2");
    assert_eq!(other(class(4096, 65536, 2)), "layer_norm_rows");
    assert_eq!(other(class(256, 1 << 20, 4)), "layer_norm_rows");
}

#[test]
fn norm_rows_a_warp_up_to_warp_packs() {
    let plan = |json: &str, len: i64| {
        let t = config_table(json);
        let view = TuneView::new(&t, None);
        let tuned = Tuned::select(&view, "norm", &[]).unwrap();
        let (_, l, _) = norm::plan(Op::RmsNorm, &norm_rows(65536, len, 8, true), SMS, &tuned);
        format!("{} {}", l.kernel, l.block)
    };
    // Rows of up to 128 packs a warp (bfloat16 1024: 4 packs a lane), unless `warp_packs` is
    // lower: then a block a row.
    let four = r#"{"norm": [{"packs": 4}]}"#;
    assert_eq!(plan(four, 1024), "rms_norm_warp_4 256");
    assert_eq!(plan(four, 256), "rms_norm_warp_1 256");
    let none = r#"{"norm": [{"packs": 4, "warp_packs": 0}]}"#;
    assert_eq!(plan(none, 1024), "rms_norm_block_4 32");
    // Rows shorter than a warp of 4 packs a thread take fewer packs a thread: a full warp.
    assert_eq!(plan(none, 256), "rms_norm_block_1 32");
    assert_eq!(plan(none, 512), "rms_norm_block_2 32");
    let some = r#"{"norm": [{"packs": 4, "warp_packs": 64}]}"#;
    assert_eq!(plan(some, 512), "rms_norm_warp_2 256");
    assert_eq!(plan(some, 1024), "rms_norm_block_4 32");
}
