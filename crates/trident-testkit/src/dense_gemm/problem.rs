//! DenseGemm as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`GemmCase`].

use std::any::Any;
use std::path::Path;

use trident_core::{DenseGemm, MatRef, Primitive, Primitives, Result, Scalar};
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
