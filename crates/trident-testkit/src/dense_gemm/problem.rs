//! DenseGemm as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`GemmCase`].

use std::any::Any;
use std::path::Path;

use trident_core::{DenseGemm, MatRef, Primitive, Primitives, Result, Scalar};
#[cfg(feature = "dist")]
use trident_core::{MatMut, Op};
use trident_reference::certify;

use super::generate::GemmCase;
use crate::cases::{Input, io};
use crate::check::Verdict;
use crate::problem::{Certified, Problem};

pub(crate) fn run_gemm<T: Scalar, B: DenseGemm<T> + ?Sized>(
    b: &B,
    c: &GemmCase<T>,
) -> Result<Vec<T>> {
    let mut out = c.c.clone();
    b.gemm(&c.params, c.a_ref(), c.b_ref(), c.c_mut(&mut out)?)?;
    Ok(out)
}

/// [`run_gemm`] across the ranks of a cluster: the rows of `op(A)` and C
/// cut evenly (views into the case's buffers: rows of A, or columns of the
/// stored A when `op_a == T`), B replicated; C's row blocks gathered back
/// into the whole buffer, padding included.
#[cfg(feature = "dist")]
fn run_gemm_sharded<T: trident_dist::ShardScalar>(
    s: &trident_dist::Sharded<'_>,
    c: &GemmCase<T>,
) -> Result<Vec<T>> {
    let rows = trident_dist::even_split(c.m, s.cluster().size(), s.cluster().rank());
    let (lda, ldc) = (c.a_shape.ld, c.c_shape.ld);
    let from = |i: usize| c.a.get(i..).unwrap_or(&[]);
    let a = if c.params.op_a == Op::N {
        MatRef::new(from(rows.start * lda), rows.len(), c.k, lda)
    } else {
        MatRef::new(from(rows.start), c.k, rows.len(), lda)
    };
    // This rank's rows of C: from its first element to the next block's.
    let end = (rows.end * ldc).min(c.c.len());
    let mut block = c.c[(rows.start * ldc).min(end)..end].to_vec();
    // An empty block still takes part in the collectives (the call agrees
    // and settles with the other ranks).
    a.and_then(|a| {
        s.gemm(
            &c.params,
            a,
            c.b_ref(),
            MatMut::new(&mut block, rows.len(), c.n, ldc)?,
        )
    })?;
    s.gather_rows(&block)
}

/// The call the reference answers: an f64 case as it is, an f32 case widened
/// (every f32 is exact in f64).
fn in_f64<T: Scalar>(c: &GemmCase<T>) -> GemmCase<f64> {
    match (c as &dyn Any).downcast_ref::<GemmCase<f64>>() {
        Some(c64) => c64.clone(),
        None => c.widen(),
    }
}

fn cert_gemm(c: &GemmCase<f64>, after: &[f64]) -> certify::Certificate {
    let view =
        |v| MatRef::new(v, c.c_shape.rows, c.c_shape.cols, c.c_shape.ld).map_err(|e| e.to_string());
    certify::gemm(&c.params, c.a_ref(), c.b_ref(), view(&c.c)?, view(after)?)
}

macro_rules! gemm_problem {
    ($t:ty, $name:literal, $compat:ident) => {
        impl Problem for GemmCase<$t> {
            /// The whole C buffer after the call, in f64.
            type Expected = Vec<f64>;
            /// The C buffer after the call.
            type Produced = Vec<$t>;
            fn primitive(&self) -> Primitive {
                Primitive::DenseGemm
            }
            fn describe(&self) -> String {
                format!(
                    "{} m={} n={} k={} {:?}{:?} {:?}",
                    $name,
                    self.m,
                    self.n,
                    self.k,
                    self.params.op_a,
                    self.params.op_b,
                    self.params.precision
                )
            }
            fn produce(&self, backend: &dyn Primitives) -> Result<Vec<$t>> {
                run_gemm::<$t, _>(backend, self)
            }
            fn expected(&self, reference: &dyn Primitives) -> Result<Vec<f64>> {
                run_gemm::<f64, _>(reference, &in_f64(self))
            }
            fn compare(&self, expected: &Vec<f64>, got: &Vec<$t>) -> Verdict {
                super::check::gemm(self, expected, got)
            }
            fn certify(&self, expected: &Vec<f64>) -> Certified {
                cert_gemm(&in_f64(self), expected).map(|w| (w, None))
            }
            fn write(&self, path: &Path) -> Result<()> {
                io::write_gemm(path, self)
            }
            #[cfg(feature = "dist")]
            fn produce_sharded(
                &self,
                sharded: &trident_dist::Sharded<'_>,
            ) -> Option<Result<Vec<$t>>> {
                Some(run_gemm_sharded::<$t>(sharded, self))
            }
            #[cfg(feature = "dist")]
            fn sharded_exact(&self) -> bool {
                // A block of rows may take another kernel or blocking than
                // the whole matrix: the contract asks the tolerance only.
                false
            }
        }

        impl Input {
            /// This input with its type spelled out (generic generators infer their
            /// scalar from it); named like the variant of the enum `Input` once was.
            #[allow(non_snake_case)]
            pub fn $compat(c: GemmCase<$t>) -> Input {
                Input::new(c)
            }
        }
    };
}

gemm_problem!(f32, "f32", Gemm32);
gemm_problem!(f64, "f64", Gemm64);
