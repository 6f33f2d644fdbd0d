//! SparseGemm as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`SpgemmCase`].

use std::path::Path;

use trident_core::{CsrMatrix, Primitive, Primitives, Result, SparseGemm, tol};
use trident_reference::certify;

use super::generate::{SpgemmCase, convert};
use crate::cases::{Input, io};
use crate::check::{Tol, Verdict};
use crate::problem::{Certified, Problem};

/// The reference's answer: `C = A B` in f64 and `|A| |B|` (same structure),
/// which bounds the rounding error of each entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SpgemmExpected {
    /// The product.
    pub c: CsrMatrix<f64>,
    /// `sum_p |A(i,p)| |B(p,j)|` per stored entry.
    pub bound: CsrMatrix<f64>,
}

fn abs_csr(m: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>> {
    CsrMatrix::new(
        m.rows(),
        m.cols(),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().iter().map(|v| v.abs()).collect(),
    )
}

macro_rules! spgemm_problem {
    ($t:ty, $name:literal, $tol:expr, $compat:ident) => {
        impl Problem for SpgemmCase<$t> {
            type Expected = SpgemmExpected;
            /// The product.
            type Produced = CsrMatrix<$t>;
            fn primitive(&self) -> Primitive {
                Primitive::SparseGemm
            }
            fn describe(&self) -> String {
                format!(
                    "{} A {}x{} nnz {}, B {}x{} nnz {}",
                    $name,
                    self.a.rows(),
                    self.a.cols(),
                    self.a.nnz(),
                    self.b.rows(),
                    self.b.cols(),
                    self.b.nnz()
                )
            }
            fn produce(&self, backend: &dyn Primitives) -> Result<CsrMatrix<$t>> {
                SparseGemm::<$t>::spgemm(backend, &self.a, &self.b)
            }
            fn expected(&self, r: &dyn Primitives) -> Result<SpgemmExpected> {
                let (a, b) = (convert::<$t, f64>(&self.a), convert::<$t, f64>(&self.b));
                let c = SparseGemm::<f64>::spgemm(r, &a, &b)?;
                let bound = SparseGemm::<f64>::spgemm(r, &abs_csr(&a)?, &abs_csr(&b)?)?;
                Ok(SpgemmExpected { c, bound })
            }
            fn compare(&self, e: &SpgemmExpected, got: &CsrMatrix<$t>) -> Verdict {
                super::check::spgemm(self, &e.c, &e.bound, got, Tol::rel($tol))
            }
            fn certify(&self, e: &SpgemmExpected) -> Certified {
                let (a, b) = (convert::<$t, f64>(&self.a), convert::<$t, f64>(&self.b));
                certify::spgemm(&a, &b, &e.c).map(|w| (w, None))
            }
            fn write(&self, path: &Path) -> Result<()> {
                io::write_spgemm(path, self)
            }
            #[cfg(feature = "dist")]
            fn produce_sharded(
                &self,
                sharded: &trident_dist::Sharded<'_>,
            ) -> Option<Result<CsrMatrix<$t>>> {
                // A cut by work (products per row), B replicated.
                Some(
                    sharded
                        .spgemm_balanced(&self.a, &self.b)
                        .and_then(|(_, block)| sharded.gather_csr(&block)),
                )
            }
        }

        impl Input {
            /// This input with its type spelled out (generic generators infer their
            /// scalar from it); named like the variant of the enum `Input` once was.
            #[allow(non_snake_case)]
            pub fn $compat(c: SpgemmCase<$t>) -> Input {
                Input::new(c)
            }
        }
    };
}

spgemm_problem!(f32, "f32", tol::SPGEMM_F32, Spgemm32);
spgemm_problem!(f64, "f64", tol::SPGEMM_F64, Spgemm64);
