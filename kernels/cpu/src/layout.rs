//! Walking tensors of any strides: dimensions are collapsed where every operand is contiguous
//! across them, so the inner loop is as long as possible (one loop over everything for
//! contiguous tensors), and the work is split over threads by rows.

use rayon::prelude::*;
use rffi_core::Tensor;
use std::ops::Range;

/// A raw base pointer that may cross threads: each task writes a disjoint part (the dispatcher
/// checked that outputs have no overlapping elements and alias inputs only identically).
#[derive(Copy, Clone)]
pub struct Ptr<T>(pub *mut T);

// SAFETY: see the type's doc; the kernels' tasks touch disjoint elements of outputs.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}

impl<T> Ptr<T> {
    pub fn of(t: &Tensor) -> Ptr<T> {
        Ptr(t.element_ptr().cast())
    }

    /// # Safety
    /// `off` (in elements) must stay inside the tensor's allocation.
    #[inline(always)]
    pub unsafe fn at(self, off: isize) -> *mut T {
        // SAFETY: forwarded contract.
        unsafe { self.0.offset(off) }
    }
}

/// `N` operands over one shape, collapsed: `shape[i]` with `strides[k][i]` (elements) for
/// operand `k`.
#[derive(Debug, Clone)]
pub struct Plan<const N: usize> {
    pub shape: Vec<usize>,
    pub strides: [Vec<isize>; N],
}

impl<const N: usize> Plan<N> {
    pub fn new(shape: &[i64], strides: [&[i64]; N]) -> Plan<N> {
        let mut dims: Vec<(usize, [isize; N])> = shape
            .iter()
            .enumerate()
            .filter(|(_, &d)| d != 1)
            .map(|(i, &d)| (d as usize, strides.map(|s| s[i] as isize)))
            .collect();
        // Merge a dimension into the next one where every operand steps over it contiguously.
        let mut i = dims.len();
        while i > 1 {
            i -= 1;
            let (inner, outer) = (dims[i], dims[i - 1]);
            if (0..N).all(|k| outer.1[k] == inner.1[k] * inner.0 as isize) {
                dims[i - 1] = (outer.0 * inner.0, inner.1);
                dims.remove(i);
            }
        }
        if dims.is_empty() {
            dims.push((1, [1; N]));
        }
        Plan {
            shape: dims.iter().map(|d| d.0).collect(),
            strides: core::array::from_fn(|k| dims.iter().map(|d| d.1[k]).collect()),
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn inner(&self) -> usize {
        *self.shape.last().unwrap()
    }

    pub fn inner_strides(&self) -> [isize; N] {
        core::array::from_fn(|k| *self.strides[k].last().unwrap())
    }

    pub fn rows(&self) -> usize {
        self.shape[..self.shape.len() - 1].iter().product()
    }

    /// Calls `f(offsets)` with every operand's offset of the start of each row in `rows`.
    pub fn for_rows(&self, rows: Range<usize>, mut f: impl FnMut([isize; N])) {
        let outer = &self.shape[..self.shape.len() - 1];
        let n = outer.len();
        if rows.is_empty() {
            return;
        }
        // The multi-index of the first row, then an odometer.
        let mut idx = vec![0usize; n];
        let mut rem = rows.start;
        for d in (0..n).rev() {
            idx[d] = rem % outer[d];
            rem /= outer[d];
        }
        let mut offs: [isize; N] =
            core::array::from_fn(|k| (0..n).map(|d| idx[d] as isize * self.strides[k][d]).sum());
        for _ in rows {
            f(offs);
            let mut d = n;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                for (k, o) in offs.iter_mut().enumerate() {
                    *o += self.strides[k][d];
                }
                if idx[d] < outer[d] {
                    break;
                }
                for (k, o) in offs.iter_mut().enumerate() {
                    *o -= self.strides[k][d] * outer[d] as isize;
                }
                idx[d] = 0;
            }
        }
    }

    /// Runs `body(offsets, len, inner_strides)` over every element, in runs along the inner
    /// dimension, on several threads when there are at least `min_parallel` elements (tasks of
    /// about `grain` elements).
    pub fn run(
        &self,
        min_parallel: usize,
        grain: usize,
        body: impl Fn([isize; N], usize, [isize; N]) + Sync,
    ) {
        let total = self.numel();
        if total == 0 {
            return;
        }
        let inner = self.inner();
        let st = self.inner_strides();
        let grain = grain.max(1);
        if total < min_parallel {
            self.for_rows(0..self.rows(), |o| body(o, inner, st));
        } else if self.shape.len() == 1 {
            // One run: split it.
            let chunks = total.div_ceil(grain);
            (0..chunks).into_par_iter().for_each(|c| {
                let start = c * grain;
                let len = grain.min(total - start);
                body(st.map(|s| s * start as isize), len, st);
            });
        } else {
            let rows_per_task = grain.div_ceil(inner).max(1);
            let rows = self.rows();
            (0..rows.div_ceil(rows_per_task))
                .into_par_iter()
                .for_each(|t| {
                    let r = t * rows_per_task..((t + 1) * rows_per_task).min(rows);
                    self.for_rows(r, |o| body(o, inner, st));
                });
        }
    }
}

/// The rows of `x` and `o` (same shape) along `axis`: a plan over every other dim with both
/// tensors' strides, the row length and the two strides along the axis. No axis (a 0-d tensor)
/// is one row of one element.
pub fn rows_along(x: &Tensor, o: &Tensor, axis: Option<usize>) -> (Plan<2>, usize, isize, isize) {
    let Some(a) = axis else {
        return (Plan::new(&[], [&[], &[]]), 1, 1, 1);
    };
    let others = |v: &[i64]| rffi_kernels::without_axis(v, a);
    let plan = Plan::new(
        &others(x.shape()),
        [&others(x.strides()), &others(o.strides())],
    );
    (
        plan,
        x.shape()[a] as usize,
        x.strides()[a] as isize,
        o.strides()[a] as isize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_contiguous_dims() {
        let p = Plan::new(&[2, 3, 4], [&[12, 4, 1], &[12, 4, 1]]);
        assert_eq!(p.shape, [24]);
        // A transposed operand stops the merge.
        let p = Plan::new(&[2, 3], [&[3, 1], &[1, 2]]);
        assert_eq!(p.shape, [2, 3]);
        // Size-1 dims vanish; 0-d becomes one element.
        let p = Plan::new(&[1, 5, 1], [&[99, 1, 7]]);
        assert_eq!((p.shape.clone(), p.strides[0].clone()), (vec![5], vec![1]));
        let p = Plan::<1>::new(&[], [&[]]);
        assert_eq!(p.shape, [1]);
    }

    #[test]
    fn rows_visit_every_offset() {
        let p = Plan::new(&[2, 3, 2], [&[1, 4, 12]]);
        let mut seen = Vec::new();
        p.for_rows(0..p.rows(), |o| {
            for j in 0..p.inner() as isize {
                seen.push(o[0] + j * p.inner_strides()[0]);
            }
        });
        seen.sort();
        let mut want: Vec<isize> = (0..2)
            .flat_map(|a| (0..3).flat_map(move |b| (0..2).map(move |c| a + 4 * b + 12 * c)))
            .collect();
        want.sort();
        assert_eq!(seen, want);
        // Starting mid-way matches the full walk.
        let mut all = Vec::new();
        p.for_rows(0..p.rows(), |o| all.push(o[0]));
        let mut tail = Vec::new();
        p.for_rows(2..p.rows(), |o| tail.push(o[0]));
        assert_eq!(&all[2..], &tail[..]);
    }
}
