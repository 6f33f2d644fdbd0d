//! DenseGemm across ranks, 1-D: the rows of `op(A)` and of C are
//! partitioned (each rank passes its block of rows), B is replicated. Each
//! element of C is the same dot product as on one device; whether its bits
//! are the same depends on the backend keeping its summation order when m
//! changes (docs/semantics.md says which do). And 2-D ([`Sharded::gemm_summa`]):
//! A, B and C all cut into blocks over a process grid, the dot products
//! split into k-panels.

use trident_core::{Error, GemmParams, MatMut, MatRef, Op, Precision, Result, Scalar, validate};

use crate::comm::CommExt;
use crate::grid::{Grid2d, check_block, panels};
use crate::sharded::{ShardScalar, Sharded, bits};

fn op_code(op: Op) -> u64 {
    match op {
        Op::N => 0,
        Op::T => 1,
        #[allow(unreachable_patterns)]
        _ => 2,
    }
}

fn precision_code(p: Precision) -> u64 {
    match p {
        Precision::Strict => 0,
        Precision::Tf32 => 1,
        Precision::Tf32x3 => 2,
        #[allow(unreachable_patterns)]
        _ => 3,
    }
}

impl<'a> Sharded<'a> {
    /// `C = alpha op(A) op(B) + beta C` for this rank's rows of `op(A)` and
    /// C, against the replicated B.
    pub fn gemm<T: ShardScalar>(
        &self,
        params: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        c: MatMut<'_, T>,
    ) -> Result<()> {
        let (k, n) = b.op_shape(params.op_b);
        self.agree(&[
            ("b.rows (of op(B))", k as u64),
            ("b.cols (of op(B))", n as u64),
            ("op_b", op_code(params.op_b)),
            ("op_a", op_code(params.op_a)),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("precision", precision_code(params.precision)),
            ("scalar type", bits(T::ONE)),
            self.replica("b (contents)", b.data()),
        ])?;
        self.settle(T::gemm(self.backend()).gemm(params, a, b, c))
    }
}

impl<'a> Sharded<'a> {
    /// [`Sharded::gemm`] with B partitioned too, for a B no rank can hold:
    /// each rank passes its block of columns of `op(B)` (`k x n_r`, stored
    /// as `op_b` says) and its rows of C with all `n` columns; the column
    /// blocks travel round the ring of ranks, and each step fills the
    /// matching columns of this rank's rows of C. Every element is still
    /// one dot product over the whole `k`.
    pub fn gemm_ring<T: ShardScalar>(
        &self,
        params: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let (k, n_mine) = b.op_shape(params.op_b);
        self.agree(&[
            ("b.rows (of op(B))", k as u64),
            ("op_b", op_code(params.op_b)),
            ("op_a", op_code(params.op_a)),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("precision", precision_code(params.precision)),
            ("scalar type", bits(T::ONE)),
        ])?;
        let widths = self.comm().all_gather_u64(n_mine as u64)?;
        let n: usize = widths.iter().map(|&w| w as usize).sum();
        let (m, ka) = a.op_shape(params.op_a);
        let shapes = if c.cols() != n {
            Err(Error::dim(
                "c.cols",
                format!(
                    "{} columns, but the ranks' blocks of op(B) have {n} in all",
                    c.cols()
                ),
            ))
        } else if c.rows() != m || ka != k {
            Err(Error::dim(
                "a",
                format!("op(A) is {m} x {ka}, C has {} rows and op(B) {k}", c.rows()),
            ))
        } else {
            Ok(())
        };
        self.settle(shapes)?;
        // This rank's block as a dense copy (what travels), in B's storage order.
        let mut block: Vec<T> = (0..b.rows())
            .flat_map(|i| b.row(i).iter().copied())
            .collect();
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let mut origin = me;
        let ldc = c.ld();
        for step in 0..p {
            let w = widths[origin] as usize;
            let col0: usize = widths[..origin].iter().map(|&x| x as usize).sum();
            let local = if w == 0 || m == 0 {
                Ok(())
            } else {
                let (rows, cols) = match params.op_b {
                    Op::N => (k, w),
                    _ => (w, k),
                };
                MatRef::dense(&block, rows, cols).and_then(|bb| {
                    let sub = MatMut::new(&mut c.data_mut()[col0..], m, w, ldc)?;
                    T::gemm(self.backend()).gemm(params, a, bb, sub)
                })
            };
            self.settle(local)?;
            if step + 1 < p {
                block = self.comm().ring_shift(&block)?;
                origin = (origin + p - 1) % p;
            }
        }
        Ok(())
    }
}
impl<'a> Sharded<'a> {
    /// `C = alpha A B + beta C` over a 2-D process grid (SUMMA): every
    /// matrix is cut into `pr x pc` blocks by [`even_split`](crate::even_split), rows into `pr`
    /// parts and columns into `pc` ([`Grid2d::block`]), and the rank at
    /// `(i, j)` passes block `(i, j)` of A (`m x k`), of B (`k x n`) and of
    /// C (`m x n`), whose block it updates in place. `(m, n, k)` is the
    /// global shape, the same on every rank; the blocks are as stored
    /// (`Op::N` only: cut the transpose instead).
    ///
    /// The inner dimension is stepped through in panels, the common
    /// refinement of A's cut of k (by `pc`) and B's (by `pr`), in
    /// increasing k: the owner of a panel's columns of A broadcasts them
    /// along its process row, the owner of its rows of B along its process
    /// column, and every rank adds `alpha A_panel B_panel` to its block of C
    /// (the first panel also scales C by `beta`) with the local backend. No
    /// rank ever holds more than a panel of another's A or B. The sum over k
    /// is thus split at the panel boundaries: the answer is within the GEMM
    /// tolerance of one device's, not bit-identical, and the same bits on
    /// every run.
    pub fn gemm_summa<T: ShardScalar>(
        &self,
        grid: &Grid2d,
        params: &GemmParams<T>,
        (m, n, k): (usize, usize, usize),
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let (pr, pc) = grid.shape();
        self.agree(&[
            ("m", m as u64),
            ("n", n as u64),
            ("k", k as u64),
            ("op_a", op_code(params.op_a)),
            ("op_b", op_code(params.op_b)),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("precision", precision_code(params.precision)),
            ("scalar type", bits(T::ONE)),
            ("grid (process rows)", pr as u64),
            ("grid (process columns)", pc as u64),
        ])?;
        for (field, op) in [("op_a", params.op_a), ("op_b", params.op_b)] {
            if op != Op::N {
                return Err(Error::arg(
                    field,
                    "gemm_summa takes the blocks as stored (Op::N); pass the blocks of the transpose instead",
                ));
            }
        }
        let (i, j) = grid.pos();
        let ((rows, kcols), (krows, cols)) = (grid.block(m, k), grid.block(k, n));
        let checked = grid
            .check_on(self.comm())
            .and_then(|()| {
                check_block(
                    "a",
                    (a.rows(), a.cols()),
                    (rows.len(), kcols.len()),
                    (m, k),
                    grid,
                )
            })
            .and_then(|()| {
                check_block(
                    "b",
                    (b.rows(), b.cols()),
                    (krows.len(), cols.len()),
                    (k, n),
                    grid,
                )
            })
            .and_then(|()| {
                check_block(
                    "c",
                    (c.rows(), c.cols()),
                    (rows.len(), cols.len()),
                    (m, n),
                    grid,
                )
            })
            .and_then(|()| finite_scalars(params))
            .and_then(|()| validate::gemm_finite(params, &a, &b, &c.as_ref()));
        self.settle(checked)?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        let (mi, nj) = (rows.len(), cols.len());
        // This rank's C, dense: the panels accumulate here and C is written
        // once at the end, so a failure part-way leaves it untouched.
        let mut acc: Vec<T> = Vec::with_capacity(mi * nj);
        for r in 0..mi {
            acc.extend_from_slice(c.as_ref().row(r));
        }
        let gemm = T::gemm(self.backend());
        let panels = if params.alpha == T::ZERO {
            Vec::new()
        } else {
            panels(k, pr, pc)
        };
        let mut local = if panels.is_empty() && mi * nj > 0 {
            // Nothing to multiply (k == 0, or alpha == 0): C = beta C, as the
            // backend does it.
            MatRef::dense(&[], mi, 0).and_then(|ea| {
                gemm.gemm(
                    params,
                    ea,
                    MatRef::dense(&[], 0, nj)?,
                    MatMut::dense(&mut acc, mi, nj)?,
                )
            })
        } else {
            Ok(())
        };
        let mut scratch = Vec::new();
        for (step, panel) in panels.iter().enumerate() {
            let w = panel.k.len();
            // The panel's columns of A, from their process column, along
            // this process row; its rows of B, from their process row, along
            // this process column.
            let mut ap = if j == panel.a_col {
                let c0 = panel.k.start - kcols.start;
                let mut v = Vec::with_capacity(mi * w);
                for r in 0..mi {
                    v.extend_from_slice(&a.row(r)[c0..c0 + w]);
                }
                v
            } else {
                vec![T::ZERO; mi * w]
            };
            if pc > 1 {
                grid.row_comm()
                    .broadcast(panel.a_col, bytemuck::cast_slice_mut(&mut ap))?;
            }
            let mut bp = if i == panel.b_row {
                let r0 = panel.k.start - krows.start;
                let mut v = Vec::with_capacity(w * nj);
                for r in r0..r0 + w {
                    v.extend_from_slice(b.row(r));
                }
                v
            } else {
                vec![T::ZERO; w * nj]
            };
            if pr > 1 {
                grid.col_comm()
                    .broadcast(panel.b_row, bytemuck::cast_slice_mut(&mut bp))?;
            }
            if local.is_err() || mi * nj == 0 {
                // Keep taking part in the broadcasts; the outcome is settled
                // once, after the last panel.
                continue;
            }
            local = (|| {
                let (ap, bp) = (MatRef::dense(&ap, mi, w)?, MatRef::dense(&bp, w, nj)?);
                if step == 0 {
                    return gemm.gemm(params, ap, bp, MatMut::dense(&mut acc, mi, nj)?);
                }
                // Later panels add to C: the product goes to a scratch block
                // first, since the backend would check C (beta 1) for
                // finiteness, and an entry that overflowed is a result.
                scratch.resize(mi * nj, T::ZERO);
                let panel_params = GemmParams {
                    beta: T::ZERO,
                    ..*params
                };
                gemm.gemm(&panel_params, ap, bp, MatMut::dense(&mut scratch, mi, nj)?)?;
                add_into(&mut acc, &scratch);
                Ok(())
            })();
        }
        self.settle(local)?;
        for r in 0..mi {
            c.row_mut(r).copy_from_slice(&acc[r * nj..(r + 1) * nj]);
        }
        Ok(())
    }
}

/// `NonFinite` for a non-finite `alpha` or `beta` (what the backend's own
/// check says, made before the first panel moves).
fn finite_scalars<T: Scalar>(params: &GemmParams<T>) -> Result<()> {
    for (field, v) in [("alpha", params.alpha), ("beta", params.beta)] {
        if !v.is_finite() {
            return Err(Error::NonFinite {
                field,
                index: 0,
                value: v.to_f64(),
            });
        }
    }
    Ok(())
}

/// `acc += x` element by element, in parallel over blocks of rows: each
/// element is one addition, so the order cannot change a bit.
fn add_into<T: ShardScalar>(acc: &mut [T], x: &[T]) {
    const PIECE: usize = 1 << 16;
    std::thread::scope(|s| {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        let per = acc.len().div_ceil(threads.max(1)).max(PIECE);
        for (a, b) in acc.chunks_mut(per).zip(x.chunks(per)) {
            s.spawn(move || {
                for (x, &y) in a.iter_mut().zip(b) {
                    *x += y;
                }
            });
        }
    });
}
