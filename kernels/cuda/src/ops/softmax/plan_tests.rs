//! The softmax variant each shape class gets on an H200 (132 SMs, sm_90) with the built-in
//! tuning files and with configs that set the candidates' keys. No GPU needed.

use crate::ops::plan_tests::{config_table, table, SMEM, SMS};
use crate::ops::{softmax, Tuned};
use rffi_kernels::{TuneTable, TuneView};

/// Softmax rows back to back and contiguous on an sm_90 with clusters, `aligned` whole 16-byte
/// packs or not.
fn softmax_rows(rows: i64, len: i64, vec: i64, aligned: bool) -> softmax::Class {
    softmax::Class {
        rows,
        len,
        vec,
        aligned_rows: aligned,
        contiguous: true,
        packed: true,
        quad_aligned: true,
        smem_block: SMEM,
        clusters: true,
    }
}

fn softmax_kernel(t: &TuneTable, rows: i64, len: i64, itemsize: i64, aligned: bool) -> String {
    softmax_kernel_of(t, rows, len, itemsize, aligned, false)
}

fn softmax_kernel_of(
    t: &TuneTable,
    rows: i64,
    len: i64,
    itemsize: i64,
    aligned: bool,
    packed: bool,
) -> String {
    let view = TuneView::new(t, Some("sm_90"));
    let vars = [
        ("cols", len),
        ("rows", rows),
        ("itemsize", itemsize),
        ("sms", SMS),
    ];
    let tuned = Tuned::select(&view, "softmax", &vars).unwrap();
    let c = softmax::Class {
        rows,
        len,
        vec: 16 / itemsize,
        aligned_rows: aligned,
        contiguous: true,
        packed,
        quad_aligned: false,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    match &p.write {
        Some(w) => format!("{} + {} x{}", p.main.kernel, w.kernel, p.chunks),
        None => format!("{} {}", p.main.kernel, p.main.block),
    }
}

#[test]
fn softmax_rows_back_to_back_use_tiles() {
    let t = table();
    // (rows, len, itemsize) -> kernel and block size: 16 KiB of whole rows a tile, for rows up
    // to 128 elements (float32 rows of 16 to 64: lane groups, measured faster) and float32 rows
    // of 257 to 1024 (16-bit ones: a warp per row or lane groups).
    let cases: &[(i64, i64, i64, &str)] = &[
        (1 << 20, 2, 4, "softmax_tileh_1_2 128"),
        (1 << 20, 7, 2, "softmax_tileh_1_8 128"),
        (1 << 20, 7, 4, "softmax_tileh_1_8 128"),
        (1 << 20, 32, 2, "softmax_tileh_4_8 128"),
        (1 << 20, 32, 4, "softmax_group_8_4 256"),
        (1 << 20, 100, 2, "softmax_tileh_16_8 128"),
        (1 << 20, 100, 4, "softmax_tileh_16_8 128"),
        (1 << 20, 257, 4, "softmax_tileh_32_16 128"),
        (1 << 16, 1000, 4, "softmax_tileh_32_32 128"),
        (1 << 16, 1024, 4, "softmax_tileh_32_32 128"),
        (1 << 20, 256, 4, "softmax_group_32_8 256"),
        (1 << 16, 1024, 2, "softmax_group_32_32 256"),
        (1 << 20, 257, 2, "softmax_group_32_16 256"),
    ];
    for &(rows, len, size, want) in cases {
        let got = softmax_kernel_of(&t, rows, len, size, false, true);
        assert_eq!(got, want, "{rows} x {len}, itemsize {size}");
    }
    // With tiles up to 1024 elements: the lanes a row and elements a lane of longer rows.
    let wide = TuneTable::from_files(
        &[(
            "default.json".to_owned(),
            r#"{"softmax": [{"tile_max": 1024}]}"#.to_owned(),
        )],
        "test".into(),
    )
    .unwrap();
    let cases: &[(i64, i64, i64, &str)] = &[
        (1 << 20, 257, 4, "softmax_tile_32_16 256"),
        (1 << 16, 1000, 4, "softmax_tile_32_32 256"),
        (1 << 16, 1024, 2, "softmax_tile_32_32 256"),
        (1 << 16, 1025, 4, "softmax_online 512"),
    ];
    for &(rows, len, size, want) in cases {
        let got = softmax_kernel_of(&wide, rows, len, size, false, true);
        assert_eq!(got, want, "{rows} x {len}, itemsize {size}");
    }
    // 32 KiB tiles (the built-in default without `sm_90.json`) of rows of 100 in float32.
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[("cols", 100), ("itemsize", 4)]).unwrap();
    let c = softmax::Class {
        rows: 1000,
        len: 100,
        vec: 4,
        aligned_rows: true,
        contiguous: true,
        packed: true,
        // The quad tiles could take these rows; no built-in config chooses them.
        quad_aligned: true,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    // 81 rows fit; 80 are five whole rounds of 16 rows (16 lanes a row, 256 threads).
    assert_eq!((p.tile_rows, p.main.grid.0), (80, 13));
    // Rows of 7: 1170 fit, 1024 (four rounds of 256) would leave 1/8 unused: kept.
    let c7 = softmax::Class { len: 7, ..c };
    assert_eq!(softmax::plan(&c7, SMS, &tuned).tile_rows, 1170);
    // Half-size tiles (`sm_90.json`): 128 threads, 16 KiB; rows of 1000 in float32: 4 a tile.
    let view = TuneView::new(&t, Some("sm_90"));
    let tuned = Tuned::select(&view, "softmax", &[("cols", 1000), ("itemsize", 4)]).unwrap();
    let c = softmax::Class { len: 1000, ..c };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!(
        (p.main.kernel, p.main.block, p.tile_rows, p.main.grid.0),
        ("softmax_tileh_32_32", 128, 4, 250)
    );
    assert!(p.why.contains("(16 KiB)"), "{}", p.why);
    // Rows of 100 in bfloat16: quads of 4 elements, 16 elements a lane (sm_90.json): 8 lanes
    // of 4 quads; 81 rows fit, 80 are ten whole rounds of 8 rows (128 threads).
    let tuned = Tuned::select(&view, "softmax", &[("cols", 100), ("itemsize", 2)]).unwrap();
    let c = softmax::Class {
        len: 100,
        vec: 8,
        quad_aligned: true,
        ..c
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!((p.main.kernel, p.tile_rows), ("softmax_tileq_8_4", 80));
    let c = softmax::Class {
        quad_aligned: false,
        ..c
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!((p.main.kernel, p.tile_rows), ("softmax_tileh_16_8", 80));
}

#[test]
fn softmax_variant_per_row_length() {
    let t = table();
    // (rows, len, itemsize, every row aligned) -> kernel and block size.
    let cases: &[(i64, i64, i64, bool, &str)] = &[
        (262144, 1, 4, true, "softmax_group_1_1 256"),
        (262144, 7, 2, false, "softmax_group_2_4 256"),
        // Aligned rows that give a lane fewer than 2 packs in a warp: G lanes of 2 packs a row.
        (262144, 32, 4, true, "softmax_lanes_4_2 256"),
        (262144, 100, 4, true, "softmax_lanes_16_2 256"),
        (262144, 256, 2, true, "softmax_lanes_16_2 256"),
        (262144, 256, 4, true, "softmax_warp_2 256"),
        (65536, 1000, 4, true, "softmax_warp_8 256"),
        (65536, 1000, 2, true, "softmax_warp_4 256"),
        (65536, 1000, 2, false, "softmax_group_32_32 256"),
        (65536, 1024, 2, true, "softmax_warp_4 256"),
        (65536, 4096, 4, true, "softmax_block_8 128"),
        (65536, 4096, 2, true, "softmax_block_4 128"),
        (4096, 16376, 2, true, "softmax_block_4 512"),
        (4096, 32000, 2, true, "softmax_smem 512"),
        // float32 rows of 32000 take an SM's shared memory alone: registers first.
        (2097, 32000, 4, true, "softmax_block_8 1024"),
        (2097, 32000, 4, false, "softmax_smem 512"),
        (8192, 50257, 2, false, "softmax_smem 512"),
        (8192, 50257, 4, false, "softmax_smem 512"),
        (64, 50257, 2, false, "softmax_smem 512"),
        // Rows longer than a block's shared memory: over a cluster where two blocks of it fit
        // an SM, else read twice.
        (1024, 128256, 2, true, "softmax_cluster_4 512"),
        (523, 128256, 4, true, "softmax_cluster_8 512"),
        (256, 262144, 4, true, "softmax_cluster_part_8 512"),
        (256, 1 << 20, 4, true, "softmax_online 1024"),
        (
            4,
            262144,
            4,
            true,
            "softmax_split_stats + softmax_split_write x64",
        ),
        (
            8,
            128256,
            2,
            false,
            "softmax_split_stats + softmax_split_write x32",
        ),
    ];
    for &(rows, len, size, aligned, want) in cases {
        assert_eq!(
            softmax_kernel(&t, rows, len, size, aligned),
            want,
            "{rows} x {len}, itemsize {size}"
        );
    }
    // Rows back to back: float32 rows of 16385 to 32768 and of more than 100000 pipelined
    // through registers; 16-bit rows and float32 rows of 50257 (a cluster of 2 was slower)
    // as above; too few rows to give every SM a block: split.
    let packed = [
        (2097, 32000, 4, true, "softmax_pipe_1 1024"),
        (523, 128256, 4, true, "softmax_pipe_4 1024"),
        (256, 262144, 4, true, "softmax_pipe_8 1024"),
        (1335, 50257, 4, false, "softmax_smem 512"),
        (4194, 32000, 2, true, "softmax_smem 512"),
        (1046, 128256, 2, true, "softmax_cluster_4 512"),
        (
            8,
            262144,
            4,
            true,
            "softmax_split_stats + softmax_split_write x33",
        ),
    ];
    for (rows, len, size, aligned, want) in packed {
        assert_eq!(
            softmax_kernel_of(&t, rows, len, size, aligned, true),
            want,
            "{rows} x {len}, itemsize {size}, back to back"
        );
    }
}

#[test]
fn softmax_rows_staged_in_shared_memory_fit_the_device() {
    let t = table();
    let view = TuneView::new(&t, Some("sm_90"));
    let tuned = Tuned::select(&view, "softmax", &[("cols", 50257), ("itemsize", 2)]).unwrap();
    // bfloat16 rows of 50257 (odd: rows at every alignment) take the row and a pack.
    let c = softmax::Class {
        rows: 8192,
        len: 50257,
        vec: 8,
        aligned_rows: false,
        contiguous: true,
        packed: true,
        quad_aligned: false,
        smem_block: SMEM,
        clusters: true,
    };
    let p = softmax::plan(&c, SMS, &tuned);
    assert_eq!(
        (p.main.kernel, p.shared, p.main.grid.0),
        ("softmax_smem", (50257 + 8) * 2, 8192)
    );
    assert!(p.why.contains("99 KiB of 227, two an SM"), "{}", p.why);
    // A device with 96 KiB a block and no clusters, or rows that are not contiguous: read
    // twice.
    for c in [
        softmax::Class {
            smem_block: 96 * 1024,
            clusters: false,
            ..c
        },
        softmax::Class {
            contiguous: false,
            ..c
        },
    ] {
        let p = softmax::plan(&c, SMS, &tuned);
        assert_eq!((p.main.kernel, p.shared), ("softmax_online", 0));
    }
}

#[test]
fn softmax_rows_pipelined_where_a_config_asks() {
    let t = config_table(r#"{"softmax": [{"pipe": 1, "cluster": 1}]}"#);
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[]).unwrap();
    let class = |rows, len, vec| softmax_rows(rows, len, vec, len % vec == 0);
    // (rows, len, elements a pack) -> kernel, threads, shared bytes a block: the fewest blocks
    // a row of which each holds its chunk at 32 values a thread (float32 8 packs, 16-bit 4),
    // at most 1024 threads; the plan's grid is every row's blocks (the launch caps it at what
    // the device holds at once).
    let cases = [
        (2097, 32000, 4, "softmax_pipe_1", 1024, 8000 * 16),
        (1335, 50257, 4, "softmax_pipe_2", 800, 6282 * 16),
        (523, 128256, 4, "softmax_pipe_4", 1024, 8016 * 16),
        (256, 262144, 4, "softmax_pipe_8", 1024, 8192 * 16),
        (4194, 32000, 8, "softmax_pipe_1", 1024, 4000 * 16),
        (1046, 128256, 8, "softmax_pipe_4", 1024, 4008 * 16),
        (512, 262144, 8, "softmax_pipe_8", 1024, 4096 * 16),
    ];
    for (rows, len, vec, kernel, threads, shared) in cases {
        let p = softmax::plan(&class(rows, len, vec), SMS, &tuned);
        assert_eq!(
            (
                p.main.kernel,
                p.main.block,
                p.shared as i64,
                p.main.grid.0 as i64
            ),
            (kernel, threads, shared, rows * p.chunks),
            "{rows} x {len}"
        );
        assert_eq!(p.kind, softmax::Kind::Pipe(p.chunks as u32));
        assert!(p.why.contains("persistent grid"), "{}", p.why);
    }
    // Rows that would not give every SM a block (split), that are not back to back, float64, a
    // device without clusters for rows longer than one block holds, and rows shorter than
    // `pipe_cols` (16384): not pipelined.
    let other = |c: softmax::Class| softmax::plan(&c, SMS, &tuned).main.kernel;
    assert_eq!(other(class(16, 128256, 4)), "softmax_split_stats");
    let strided = softmax::Class {
        packed: false,
        ..class(1024, 128256, 4)
    };
    assert_eq!(other(strided), "softmax_cluster_8");
    assert_eq!(other(class(1024, 65536, 2)), "softmax_cluster_8");
    let alone = softmax::Class {
        clusters: false,
        ..class(1024, 65536, 4)
    };
    assert_eq!(other(alone), "softmax_online");
    assert_eq!(
        other(softmax::Class {
            clusters: false,
            ..class(1024, 32768, 4)
        }),
        "softmax_pipe_1"
    );
    assert_eq!(other(class(1024, 8192, 4)), "softmax_block_4");
}

#[test]
fn softmax_rows_over_a_cluster_where_a_config_asks() {
    let t = config_table(r#"{"softmax": [{"cluster": 1}]}"#);
    let view = TuneView::new(&t, None);
    let tuned = Tuned::select(&view, "softmax", &[]).unwrap();
    let class = |rows, len, vec| softmax_rows(rows, len, vec, true);
    // (rows, len, elements a pack) -> kernel, shared bytes a block, grid: rows too long for a
    // block's shared memory over the fewest blocks of which two fit an SM (bfloat16 rows of
    // 128256: 4 of 32 KiB + 2 packs).
    let cases = [
        (1024, 128256, 8, "softmax_cluster_4", (32064 + 16) * 2, 4096),
        (512, 262144, 8, "softmax_cluster_8", (32768 + 16) * 2, 4096),
        (523, 128256, 4, "softmax_cluster_8", (16032 + 8) * 4, 4184),
    ];
    for (rows, len, vec, kernel, shared, grid) in cases {
        let p = softmax::plan(&class(rows, len, vec), SMS, &tuned);
        assert_eq!(
            (p.main.kernel, p.shared as i64, p.main.grid.0 as i64),
            (kernel, shared, grid),
            "{rows} x {len}"
        );
    }
    // No clusters on the device; rows of which 8 blocks fit only one an SM (float32 rows of
    // 262144: 8 of 128 KiB); rows longer still: read twice.
    let p = softmax::plan(
        &softmax::Class {
            clusters: false,
            ..class(1024, 128256, 8)
        },
        SMS,
        &tuned,
    );
    assert_eq!(p.main.kernel, "softmax_online");
    for (len, vec) in [(262144, 4), (1 << 22, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &tuned);
        assert_eq!(p.main.kernel, "softmax_online", "{len}");
    }
    // `cluster_part`: those chunks of 8 blocks staged in part, as much as two blocks an SM
    // hold (float32 and bfloat16 rows of 1 MiB: 128 KiB chunks, 111.5 KiB staged); rows whose
    // chunks are more than twice that are still read twice.
    let t = config_table(r#"{"softmax": [{"cluster": 1, "cluster_part": 1}]}"#);
    let view = TuneView::new(&t, None);
    let part = Tuned::select(&view, "softmax", &[]).unwrap();
    let half = (SMEM / 2 - 2048) / 16 * 16;
    for (len, vec) in [(262144, 4), (262147, 4), (524288, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &part);
        assert_eq!(
            (p.main.kernel, p.shared as i64, p.main.grid.0),
            ("softmax_cluster_part_8", half, 2048),
            "{len}"
        );
        assert!(p.why.contains("reads the rest"), "{}", p.why);
    }
    for (len, vec) in [(600000, 4), (1 << 22, 8)] {
        let p = softmax::plan(&class(256, len, vec), SMS, &part);
        assert_eq!(p.main.kernel, "softmax_online", "{len}");
    }
    // Chunks that fit whole are planned as without the key.
    let p = softmax::plan(&class(512, 262144, 8), SMS, &part);
    assert_eq!(
        (p.main.kernel, p.shared as i64),
        ("softmax_cluster_8", (32768 + 16) * 2)
    );
    // Rows a block stages or holds stay there: two an SM (bfloat16 rows of 32000, float32
    // rows of 16384), or alone (float32 rows of 32000 in registers, 50257 staged).
    for (len, vec, kernel) in [
        (32000, 8, "softmax_smem"),
        (16384, 4, "softmax_smem"),
        (32000, 4, "softmax_block_8"),
        (50257, 4, "softmax_smem"),
    ] {
        let p = softmax::plan(&class(4096, len, vec), SMS, &tuned);
        assert_eq!(p.main.kernel, kernel, "{len}");
    }
}
