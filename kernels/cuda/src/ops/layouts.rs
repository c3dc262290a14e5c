//! The layouts the elementwise kernels take besides contiguous packs and plain strides, each
//! with the test of when it applies: `Bc` (broadcast rows, columns and values over rows of whole
//! packs), `Tl` (two dims with a transposed operand: tiles through shared memory) and `Hv` (rows
//! read every element or every second one, in 8-byte halves of packs).

use super::elementwise::Form;
use super::{Lay, Lay32};

/// A call's form and its layout: the struct its kernel takes (the others unused).
#[derive(Copy, Clone, Debug, Default)]
pub struct Layout {
    pub form: Form,
    pub lay: Lay,
    pub lay32: Lay32,
    pub bc: Bc,
    pub tl: Tl,
    pub hv: Hv,
}

/// `struct Bc` of the kernels: rows of `cv` packs, each operand's mode and stride.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Bc {
    rows: u64,
    cv: u64,
    mul: u32,
    shr: u32,
    fast: i32,
    ma: i32,
    mb: i32,
    sa: i64,
    sb: i64,
}

/// The broadcast form of a binary op, when it applies: the output compact and aligned, the
/// layout (in the output's order) at most two dims [R, C] with C a multiple of the pack, and
/// each input full (strides (C, 1)), a row ((0, 1)), a column ((s, 0)) or one value; full and
/// row operands aligned.
pub fn broadcast_form(shape: &[i64], strides: &[&[i64]], ptrs: &[u64], vec: i64) -> Option<Bc> {
    if strides.len() != 3 {
        return None;
    }
    let dims = super::collapse(shape, strides);
    let (rows, c, so, si) = match dims.as_slice() {
        [] => return None,
        [(c, s)] => (1, *c, [0, s[2]], [[0, s[0]], [0, s[1]]]),
        [(r, s0), (c, s1)] => (*r, *c, [s0[2], s1[2]], [[s0[0], s1[0]], [s0[1], s1[1]]]),
        _ => return None,
    };
    if c % vec != 0 || so[1] != 1 || (rows > 1 && so[0] != c) || ptrs[2] % 16 != 0 {
        return None;
    }
    let mut modes = [0i32; 2];
    let mut col = [0i64; 2];
    for j in 0..2 {
        let [sr, sc] = si[j];
        modes[j] = match (sr, sc) {
            (sr, 1) if (sr == c || rows == 1) && ptrs[j] % 16 == 0 => 0,
            (0, 1) if ptrs[j] % 16 == 0 => 1,
            (0, 0) => 3,
            (sr, 0) => {
                col[j] = sr;
                2
            }
            _ => return None,
        };
    }
    if modes == [0, 0] {
        return None; // plain vec handles it
    }
    let cv = (c / vec) as u64;
    let npk = rows as u64 * cv;
    let (mul, shr) = super::fast_div(cv.min(u32::MAX as u64) as u32);
    Some(Bc {
        rows: rows as u64,
        cv,
        mul,
        shr,
        fast: (npk < 1 << 31 && cv < 1 << 31) as i32,
        ma: modes[0],
        mb: modes[1],
        sa: col[0],
        sb: col[1],
    })
}

/// `struct Tl` of the kernels: [R, C] in the output's order, each operand's strides (inputs,
/// then the output), and which inputs go through shared memory.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Tl {
    r: i64,
    c: i64,
    sr: [i64; 3],
    sc: [i64; 3],
    via: [i32; 2],
}

/// The tiled form, when it applies: after merging, two dims [R, C] of at least a tile's side,
/// the output's columns contiguous, and some input with contiguous rows and not columns (a
/// transposed operand, read through shared memory).
pub fn tiled_form(shape: &[i64], strides: &[&[i64]]) -> Option<Tl> {
    let k = strides.len();
    let dims = super::collapse(shape, strides);
    let [(r, s0), (c, s1)] = dims.as_slice() else {
        return None;
    };
    if *r < 32 || *c < 32 || s1[k - 1] != 1 {
        return None;
    }
    let mut t = Tl {
        r: *r,
        c: *c,
        ..Tl::default()
    };
    for j in 0..k {
        // The output's strides go last (slot 2) whatever the inputs' count.
        let slot = if j == k - 1 { 2 } else { j };
        t.sr[slot] = s0[j];
        t.sc[slot] = s1[j];
        if j < k - 1 {
            t.via[j] = (s0[j] == 1 && s1[j] != 1) as i32;
        }
    }
    (t.via != [0, 0]).then_some(t)
}

/// `struct Hv` of the kernels: `units` of H = vec / 2 outputs, `cu` a row; each input's mode
/// (0: every element, 1 and 2: every second one from a pack's first or second element) and row
/// stride in elements (fields, not arrays, so that the kernels keep them in registers).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Hv {
    units: u64,
    cu: u64,
    mul: u32,
    shr: u32,
    fast: i32,
    ma: i32,
    mb: i32,
    ra: i64,
    rb: i64,
}

/// The halves form, when it applies: at most two dims [R, C] after merging (in the output's
/// order), the output compact with C a multiple of H = vec / 2 and 8-byte aligned, and each
/// input read every element (8-byte aligned, row strides of whole halves) or every second one
/// from the first or second element of a 16-byte pack (row strides of whole packs), so that
/// every unit of H outputs reads aligned memory.
pub fn halves_form(shape: &[i64], strides: &[&[i64]], ptrs: &[u64], vec: i64) -> Option<Hv> {
    let k = strides.len();
    let (h, esize) = (vec / 2, 16 / vec);
    if !(2..=3).contains(&k) || h < 1 {
        return None;
    }
    let dims = super::collapse(shape, strides);
    let (rows, c, sr, sc) = match dims.as_slice() {
        [(c, s)] => (1, *c, [0i64; 3], *s),
        [(r, s0), (c, s1)] => (*r, *c, *s0, *s1),
        _ => return None,
    };
    let out = k - 1;
    let aligned = |bytes: i64, to: i64| bytes.rem_euclid(to) == 0;
    if c % h != 0 || sc[out] != 1 || (rows > 1 && sr[out] != c) || ptrs[out] % 8 != 0 {
        return None;
    }
    let mut hv = Hv::default();
    for j in 0..out {
        let p = ptrs[j] as i64;
        let (mode, rs) = if j == 0 {
            (&mut hv.ma, &mut hv.ra)
        } else {
            (&mut hv.mb, &mut hv.rb)
        };
        *rs = sr[j];
        *mode = match sc[j] {
            1 if aligned(p, 8) && aligned(sr[j] * esize, 8) => 0,
            2 if aligned(sr[j] * esize, 16) => match p.rem_euclid(16) / esize {
                ph @ (0 | 1) if aligned(p, esize) => 1 + ph as i32,
                _ => return None,
            },
            _ => return None,
        };
    }
    let cu = (c / h) as u64;
    let units = rows as u64 * cu;
    (hv.mul, hv.shr) = super::fast_div(cu.min(u32::MAX as u64) as u32);
    hv.units = units;
    hv.cu = cu;
    hv.fast = (units < 1 << 31 && cu < 1 << 31) as i32;
    Some(hv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (modes, row strides, units, units a row) of the halves form, or None.
    fn hv(shape: &[i64], strides: &[&[i64]], ptrs: &[u64], esize: i64) -> Option<String> {
        halves_form(shape, strides, ptrs, 16 / esize).map(|h| {
            let (m, r) = ([h.ma, h.mb], [h.ra, h.rb]);
            format!("{m:?} {r:?} {} {} {}", h.units, h.cu, h.fast)
        })
    }

    #[test]
    fn rows_read_every_second_element_take_halves_of_packs() {
        let (a, o) = (1 << 20, 1 << 24);
        // float32 a[:, ::2] (a 8192 x 8192): one run of every second element (the dims merge),
        // packs from their first element; b[:, 1::2] from their second.
        let even: &[i64] = &[8192, 2];
        let out: &[i64] = &[4096, 1];
        let shape = [8192, 4096];
        let units = 8192 * 2048;
        let want = format!("[1, 0] [0, 0] {units} {units} 1");
        assert_eq!(hv(&shape, &[even, out], &[a, o], 4), Some(want));
        let want = format!("[1, 2] [0, 0] {units} {units} 1");
        assert_eq!(
            hv(&shape, &[even, even, out], &[a, a + 4, o], 4),
            Some(want)
        );
        // A pack's third element on: no unit reads one pack.
        assert_eq!(hv(&shape, &[even, out], &[a + 8, o], 4), None);
        // Rows: 1000 of every second element of 2048 (whole packs a row), into 64 x 1000.
        let rows: &[i64] = &[2048, 2];
        let want = "[2, 0] [2048, 0] 32000 500 1".to_owned();
        assert_eq!(
            hv(&[64, 1000], &[rows, &[1000, 1]], &[a + 4, o], 4),
            Some(want)
        );
        // bfloat16 (units of 4): phases 0 and 1 of 8.
        let want = "[2, 0] [2048, 0] 16000 250 1".to_owned();
        assert_eq!(
            hv(&[64, 1000], &[rows, &[1000, 1]], &[a + 2, o], 2),
            Some(want)
        );
        assert_eq!(hv(&[64, 1000], &[rows, &[1000, 1]], &[a + 4, o], 2), None);
        // Rows of every element (a slice of columns), 8-byte aligned: 8-byte loads.
        let sliced: &[i64] = &[1024, 1];
        let want = "[0, 0] [1024, 0] 16384 256 1".to_owned();
        assert_eq!(
            hv(&[64, 512], &[sliced, &[512, 1]], &[a + 8, o], 4),
            Some(want)
        );
        // One dim: x[::2] of 2000 elements into 1000.
        let want = "[1, 0] [0, 0] 500 500 1".to_owned();
        assert_eq!(hv(&[1000], &[&[2], &[1]], &[a, o], 4), Some(want));
    }

    #[test]
    fn other_rows_keep_the_strided_kernels() {
        let (a, o) = (1 << 20, 1 << 24);
        // Rows whose phase changes (a row of 2002 float32 is not whole packs), rows of an odd
        // count of float32 outputs, every third element, a non-compact or misaligned output,
        // a broadcast column, three dims.
        let out: &[i64] = &[1000, 1];
        assert_eq!(hv(&[64, 1000], &[&[2002, 2], out], &[a, o], 4), None);
        assert_eq!(hv(&[64, 1001], &[&[2048, 2], &[1001, 1]], &[a, o], 4), None);
        assert_eq!(hv(&[64, 1000], &[&[3000, 3], out], &[a, o], 4), None);
        assert_eq!(hv(&[64, 1000], &[&[2048, 2], &[2000, 1]], &[a, o], 4), None);
        assert_eq!(hv(&[64, 1000], &[&[2048, 2], out], &[a, o + 4], 4), None);
        assert_eq!(hv(&[64, 1000], &[&[1, 0], out], &[a, o], 4), None);
        let s3: &[i64] = &[1 << 16, 2048, 2];
        assert_eq!(
            hv(&[4, 64, 1000], &[s3, &[1 << 17, 1000, 1]], &[a, o], 4),
            None
        );
    }
}
