//! The SparseCoder (Batch-OMP) conformance suite and its bad-input group (see
//! [`crate::conformance`] for what every suite runs).

use crate::cases::{self, *};
use crate::conformance::*;
use proptest::prelude::*;
use trident_core::*;

/// The SparseCoder suite (f32 and f64, all three stop rules).
pub fn sparse_coder(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("sparse_coder", b);
    let k = || -> Result<bool> {
        let d = Dictionary::new(2, 3, vec![1.0f64, 0.0, 0.6, 0.0, 1.0, 0.8])?;
        let x = [0.0, 3.0, 3.0, 0.0];
        let c = SparseCoder::<f64>::encode(b, &d, MatRef::dense(&x, 2, 2)?, StopRule::Sparsity(1))?;
        Ok(c.offsets == [0, 1, 2]
            && c.atoms == [1, 0]
            && c.coefs == [3.0, 3.0]
            && c.residual_norm2 == [0.0, 0.0])
    };
    known(&mut r, "2 x 3 dictionary, one atom each", k());
    exact_edges::<f32>(&mut r, b);
    exact_edges::<f64>(&mut r, b);
    run_catalog(&mut r, b, "sparse_coder");
    run_determinism(&mut r, b, "sparse_coder");
    let strategy = (
        (1usize..12, 1usize..24, 0usize..6),
        (0usize..8, 0u8..3, 0usize..3, any::<bool>(), any::<u64>()),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((n, atoms, count), (sp, rule, noise, f64s, seed))| {
            let noise = [0.0, 0.01, 0.1][noise];
            // Error targets at a fraction of the signal energy (~ min(sp, atoms)).
            let energy = sp.min(atoms).max(1) as f64;
            let rule = match rule {
                0 => StopRule::Sparsity(sp),
                1 => StopRule::Error(0.05 * energy),
                _ => StopRule::SparsityOrError {
                    sparsity: sp,
                    error: 0.05 * energy,
                },
            };
            if f64s {
                Input::Omp64(cases::omp_random(
                    n,
                    atoms,
                    count,
                    sp.max(1),
                    noise,
                    rule,
                    seed,
                ))
            } else {
                Input::Omp32(cases::omp_random(
                    n,
                    atoms,
                    count,
                    sp.max(1),
                    noise,
                    rule,
                    seed,
                ))
            }
        },
    );
    r
}

/// The exact answers of the hand-made cases ([`super::edges`]): nearly
/// dependent atoms and the ends of the number range.
fn exact_edges<T: Scalar>(r: &mut SuiteReport, b: &dyn Primitives)
where
    for<'x> dyn Primitives + 'x: SparseCoder<T>,
{
    for e in super::edges::omp_edges::<T>() {
        let c = &e.case;
        match SparseCoder::<T>::encode(b, &c.dict, c.signals_ref(), c.rule) {
            Ok(got) => match e.mismatch(&got) {
                None => r.pass(),
                Some(m) => r.fail(format!("exact answer {}: {m}", e.name)),
            },
            Err(err) if crate::check::is_unsupported(&err) => {
                r.skip(format!("exact answer {}: {err}", e.name))
            }
            Err(err) => r.fail(format!("exact answer {}: error {err}", e.name)),
        }
    }
}

// -------------------------------------------------------------- bad input

fn bad_omp_for<T: Scalar>(r: &mut SuiteReport, b: &dyn Primitives)
where
    for<'x> dyn Primitives + 'x: SparseCoder<T>,
{
    let t = T::NAME;
    let d = cases::random_dictionary::<T>(4, 6, 1);
    let x: Vec<T> = cases::dense_signals(4, 2, 2);
    let x5: Vec<T> = cases::dense_signals(5, 2, 3);
    let enc = |x: &[T], n: usize, rule: StopRule| -> Result<_> {
        SparseCoder::<T>::encode(b, &d, MatRef::dense(x, x.len() / n, n)?, rule)
    };
    expect_err(
        r,
        &format!("encode {t} signal length 5 for atoms of 4"),
        enc(&x5, 5, StopRule::Sparsity(2)),
        "DimensionMismatch{signals}",
        dim("signals"),
    );
    let mut xn = x.clone();
    xn[5] = T::from_f64(f64::NAN);
    expect_err(
        r,
        &format!("encode {t} NaN signal"),
        enc(&xn, 4, StopRule::Sparsity(2)),
        "NonFinite{signals}",
        nonfinite("signals"),
    );
    expect_err(
        r,
        &format!("encode {t} negative error target"),
        enc(&x, 4, StopRule::Error(-1.0)),
        "InvalidArgument{rule}",
        arg("rule"),
    );
    expect_err(
        r,
        &format!("encode {t} NaN error target"),
        enc(&x, 4, StopRule::Error(f64::NAN)),
        "InvalidArgument{rule}",
        arg("rule"),
    );
    expect_err(
        r,
        &format!("encode {t} infinite error target"),
        enc(
            &x,
            4,
            StopRule::SparsityOrError {
                sparsity: 2,
                error: f64::INFINITY,
            },
        ),
        "InvalidArgument{rule}",
        arg("rule"),
    );
    let mut nd = d.data().to_vec();
    nd[0] = nd[0] * T::from_f64(1.5) + T::from_f64(0.1);
    expect_err(
        r,
        &format!("Dictionary::new {t} non-unit column"),
        Dictionary::new(4, 6, nd),
        "InvalidArgument{dictionary}",
        arg("dictionary"),
    );
    let mut nn = d.data().to_vec();
    nn[3] = T::from_f64(f64::INFINITY);
    expect_err(
        r,
        &format!("Dictionary::new {t} inf"),
        Dictionary::new(4, 6, nn),
        "NonFinite{dictionary.data}",
        nonfinite("dictionary.data"),
    );
    expect_err(
        r,
        &format!("Dictionary::new {t} wrong length"),
        Dictionary::new(4, 5, d.data().to_vec()),
        "DimensionMismatch{dictionary.data}",
        dim("dictionary.data"),
    );
    expect_err(
        r,
        &format!("Dictionary::normalize {t} zero column"),
        Dictionary::normalize(2, 2, vec![T::ONE, T::ZERO, T::ONE, T::ZERO]),
        "InvalidArgument{dictionary}",
        arg("dictionary"),
    );
}

/// Bad input for SparseCoder (f32 and f64) and `Dictionary`.
pub fn bad_input_sparse_coder(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_sparse_coder", b);
    bad_omp_for::<f32>(&mut r, b);
    bad_omp_for::<f64>(&mut r, b);
    r
}
