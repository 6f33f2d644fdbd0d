//! SparseCoder as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes an [`OmpCase`].

use std::path::Path;

#[cfg(feature = "dist")]
use trident_core::MatRef;
use trident_core::{Dictionary, Primitive, Primitives, Result, Scalar, SparseCoder, SparseCodes};
use trident_reference::certify;

use super::generate::OmpCase;
use crate::cases::{Input, io};
use crate::check::Verdict;
use crate::problem::{Certified, Problem};

/// The same OMP case in f64 (every f32 is exact in f64).
pub fn widen_omp<T: Scalar>(c: &OmpCase<T>) -> Result<OmpCase<f64>> {
    let dict = Dictionary::new(
        c.dict.n(),
        c.dict.atoms(),
        c.dict.data().iter().map(|v| v.to_f64()).collect(),
    )?;
    Ok(OmpCase {
        dict,
        signals: c.signals.iter().map(|v| v.to_f64()).collect(),
        count: c.count,
        rule: c.rule,
    })
}

macro_rules! omp_problem {
    ($t:ty, $name:literal, $compat:ident) => {
        impl Problem for OmpCase<$t> {
            /// Codes computed in f64.
            type Expected = SparseCodes<f64>;
            /// The backend's codes.
            type Produced = SparseCodes<$t>;
            fn primitive(&self) -> Primitive {
                Primitive::SparseCoder
            }
            fn describe(&self) -> String {
                format!(
                    "{} D {}x{}, {} signals, {:?}",
                    $name,
                    self.dict.n(),
                    self.dict.atoms(),
                    self.count,
                    self.rule
                )
            }
            fn produce(&self, backend: &dyn Primitives) -> Result<SparseCodes<$t>> {
                SparseCoder::<$t>::encode(backend, &self.dict, self.signals_ref(), self.rule)
            }
            fn expected(&self, reference: &dyn Primitives) -> Result<SparseCodes<f64>> {
                let w = widen_omp(self)?;
                SparseCoder::<f64>::encode(reference, &w.dict, w.signals_ref(), w.rule)
            }
            fn compare(&self, expected: &SparseCodes<f64>, got: &SparseCodes<$t>) -> Verdict {
                super::check::omp(self, expected, got)
            }
            fn certify(&self, expected: &SparseCodes<f64>) -> Certified {
                let w = widen_omp(self).map_err(|e| e.to_string())?;
                certify::omp_codes(&w.dict, w.signals_ref(), w.rule, expected).map(|w| (w, None))
            }
            fn write(&self, path: &Path) -> Result<()> {
                io::write_omp(path, self)
            }
            #[cfg(feature = "dist")]
            fn produce_sharded(
                &self,
                sharded: &trident_dist::Sharded<'_>,
            ) -> Option<Result<SparseCodes<$t>>> {
                // Signals cut evenly by rows, the dictionary replicated.
                let n = self.dict.n();
                let rows = trident_dist::even_split(
                    self.count,
                    sharded.cluster().size(),
                    sharded.cluster().rank(),
                );
                let run = MatRef::dense(&self.signals[rows.start * n..rows.end * n], rows.len(), n)
                    .and_then(|x| sharded.encode(&self.dict, x, self.rule))
                    .and_then(|codes| sharded.gather_codes(&codes));
                Some(run)
            }
        }

        impl Input {
            /// This input with its type spelled out (generic generators infer their
            /// scalar from it); named like the variant of the enum `Input` once was.
            #[allow(non_snake_case)]
            pub fn $compat(c: OmpCase<$t>) -> Input {
                Input::new(c)
            }
        }
    };
}

omp_problem!(f32, "f32", Omp32);
omp_problem!(f64, "f64", Omp64);
