//! `matmul`, 2-D and batched, through `matrixmultiply` (a packed, blocked GEMM that takes any
//! strides, so transposed and sliced operands need no copy). float16 and bfloat16 are widened
//! to float32 first and rounded once at the end.

use crate::elem::Elem;
use crate::layout::{Plan, Ptr};
use half::{bf16, f16};
use rayon::prelude::*;
use rffi_core::{Result, Tensor};
use rffi_kernels::{matmul_shape, OpCall};

/// Strides in elements of the last two dims, and of the batch dims (zeros for a 2-D operand
/// shared by every batch entry).
fn batch_strides(t: &Tensor, batch_nd: usize) -> (Vec<i64>, isize, isize) {
    let nd = t.ndim();
    let s = t.strides();
    let lead = if nd == 2 {
        vec![0; batch_nd]
    } else {
        s[..nd - 2].to_vec()
    };
    (lead, s[nd - 2] as isize, s[nd - 1] as isize)
}

struct Gemm {
    m: usize,
    k: usize,
    n: usize,
    a: (isize, isize),
    b: (isize, isize),
    c: (isize, isize),
}

/// # Safety
/// The pointers and strides must describe the three matrices.
unsafe fn gemm_f32(g: &Gemm, a: *const f32, b: *const f32, c: *mut f32) {
    // SAFETY: forwarded contract.
    unsafe {
        matrixmultiply::sgemm(
            g.m, g.k, g.n, 1.0, a, g.a.0, g.a.1, b, g.b.0, g.b.1, 0.0, c, g.c.0, g.c.1,
        )
    }
}

/// # Safety
/// As `gemm_f32`.
unsafe fn gemm_f64(g: &Gemm, a: *const f64, b: *const f64, c: *mut f64) {
    // SAFETY: forwarded contract.
    unsafe {
        matrixmultiply::dgemm(
            g.m, g.k, g.n, 1.0, a, g.a.0, g.a.1, b, g.b.0, g.b.1, 0.0, c, g.c.0, g.c.1,
        )
    }
}

/// One product of half-precision operands: widen into float32 buffers, multiply, round.
///
/// # Safety
/// As `gemm_f32`.
unsafe fn gemm_half<T: Elem<C = f32>>(g: &Gemm, a: *const T, b: *const T, c: *mut T) {
    let (m, k, n) = (g.m, g.k, g.n);
    let mut wa = vec![0f32; m * k];
    let mut wb = vec![0f32; k * n];
    let mut wc = vec![0f32; m * n];
    // SAFETY: forwarded contract; the buffers are compact.
    unsafe {
        for i in 0..m {
            for j in 0..k {
                wa[i * k + j] = (*a.offset(i as isize * g.a.0 + j as isize * g.a.1)).load();
            }
        }
        for i in 0..k {
            for j in 0..n {
                wb[i * n + j] = (*b.offset(i as isize * g.b.0 + j as isize * g.b.1)).load();
            }
        }
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            wa.as_ptr(),
            k as isize,
            1,
            wb.as_ptr(),
            n as isize,
            1,
            0.0,
            wc.as_mut_ptr(),
            n as isize,
            1,
        );
        for i in 0..m {
            for j in 0..n {
                *c.offset(i as isize * g.c.0 + j as isize * g.c.1) = T::store(wc[i * n + j]);
            }
        }
    }
}

fn matmul_typed<T: Elem>(
    call: &OpCall<'_>,
    gemm: unsafe fn(&Gemm, *const T, *const T, *mut T),
) -> Result<()> {
    let (a, b, o) = (&call.inputs[0], &call.inputs[1], call.out);
    let ms = matmul_shape(a, b)?;
    let (m, k, n) = (ms.m as usize, ms.k as usize, ms.n as usize);
    let bn = ms.batch.len();
    let (sa, ra, ca) = batch_strides(a, bn);
    let (sb, rb, cb) = batch_strides(b, bn);
    let (so, ro, co) = batch_strides(o, bn);
    let plan = Plan::new(&ms.batch, [&sa, &sb, &so]);
    let g = Gemm {
        m,
        k,
        n,
        a: (ra, ca),
        b: (rb, cb),
        c: (ro, co),
    };
    let (pa, pb, po) = (Ptr::<T>::of(a), Ptr::<T>::of(b), Ptr::<T>::of(o));
    if o.numel() == 0 {
        return Ok(());
    }
    let mut offsets = Vec::with_capacity(plan.numel());
    let st = plan.inner_strides();
    plan.for_rows(0..plan.rows(), |off| {
        for j in 0..plan.inner() as isize {
            offsets.push([off[0] + j * st[0], off[1] + j * st[1], off[2] + j * st[2]]);
        }
    });
    let one = |off: &[isize; 3]| {
        // SAFETY: each batch entry's matrices, from the operands' own layouts; the dispatcher
        // checked that out overlaps neither input, and entries of out are disjoint.
        unsafe {
            let c = po.at(off[2]);
            if k == 0 {
                for i in 0..m as isize {
                    for j in 0..n as isize {
                        // All-zero bits are 0 for every element type.
                        *c.offset(i * ro + j * co) = core::mem::zeroed::<T>();
                    }
                }
            } else {
                gemm(&g, pa.at(off[0]), pb.at(off[1]), c);
            }
        }
    };
    // Small products are cheaper side by side; large ones are threaded inside the GEMM.
    if offsets.len() > 1 && m * n * k < 1 << 21 {
        offsets.par_iter().for_each(one);
    } else {
        offsets.iter().for_each(one);
    }
    Ok(())
}

pub fn matmul(call: &OpCall<'_>) -> Result<()> {
    let d = call.dtype;
    if d == f32::DTYPE {
        matmul_typed::<f32>(call, gemm_f32)
    } else if d == f64::DTYPE {
        matmul_typed::<f64>(call, gemm_f64)
    } else if d == f16::DTYPE {
        matmul_typed::<f16>(call, gemm_half::<f16>)
    } else {
        matmul_typed::<bf16>(call, gemm_half::<bf16>)
    }
}
