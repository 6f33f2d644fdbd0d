//! The SparseCoder (Batch-OMP) cases of the catalog ([`crate::cases`]): the random
//! contract-family cases at each size, then the edge cases.

use trident_core::*;

use crate::cases::catalog::{add, pick};
use crate::cases::*;

pub(crate) fn omp_cases(size: Size) -> Vec<Case> {
    let p = "sparse_coder";
    let mut v = Vec::new();
    let l32 = pick(size, 200usize, 20_000);
    let l64 = pick(size, 100usize, 5_000);
    add(
        &mut v,
        format!("omp-dct-64x256-k16-{l32}"),
        p,
        false,
        move |s| Input::Omp32(omp_dct(l32, s)),
    );
    add(
        &mut v,
        format!("omp-dct-64x256-k16-{l64}-f64"),
        p,
        false,
        move |s| Input::Omp64(omp_dct(l64, s)),
    );
    let lr = pick(size, 100usize, 5_000);
    add(
        &mut v,
        format!("omp-random-32x64-error-{lr}-f64"),
        p,
        false,
        move |s| {
            // Stop at 5% of the typical signal energy (each signal has norm ~ sqrt(6)).
            Input::Omp64(omp_random(32, 64, lr, 6, 0.05, StopRule::Error(0.3), s))
        },
    );
    add(
        &mut v,
        format!("omp-random-32x64-both-{lr}"),
        p,
        false,
        move |s| {
            Input::Omp32(omp_random(
                32,
                64,
                lr,
                6,
                0.05,
                StopRule::SparsityOrError {
                    sparsity: 4,
                    error: 0.3,
                },
                s,
            ))
        },
    );
    // Edge cases.
    add(&mut v, "omp-edge-signal-is-atom".into(), p, true, |_| {
        // Each signal is a scaled atom: one atom, (near) zero residual.
        let dict = dct_dictionary::<f32>(8, 16);
        let mut signals = Vec::new();
        for (t, j) in [0usize, 1, 17, 100, 255].into_iter().enumerate() {
            let scale = [1.0f32, -2.0, 0.5, 3.0, -1.0][t];
            signals.extend(dict.atom(j).iter().map(|x| x * scale));
        }
        Input::Omp32(OmpCase {
            dict,
            signals,
            count: 5,
            rule: StopRule::SparsityOrError {
                sparsity: 4,
                error: 1e-6,
            },
        })
    });
    add(
        &mut v,
        "omp-edge-signal-is-atom-f64".into(),
        p,
        true,
        |_| {
            let dict = dct_dictionary::<f64>(8, 16);
            let mut signals = dict.atom(42);
            signals.extend(dict.atom(3).iter().map(|x| -x));
            Input::Omp64(OmpCase {
                dict,
                signals,
                count: 2,
                rule: StopRule::SparsityOrError {
                    sparsity: 4,
                    error: 1e-20,
                },
            })
        },
    );
    add(&mut v, "omp-edge-zero-signal".into(), p, true, |s| {
        let mut c = omp_random::<f32>(16, 32, 3, 3, 0.0, StopRule::Sparsity(5), s);
        c.signals[16..32].iter_mut().for_each(|x| *x = 0.0);
        Input::Omp32(c)
    });
    add(&mut v, "omp-edge-no-signals".into(), p, true, |s| {
        Input::Omp64(omp_random(16, 32, 0, 3, 0.0, StopRule::Sparsity(5), s))
    });
    add(&mut v, "omp-edge-identity".into(), p, true, |s| {
        let mut d = vec![0.0f32; 64];
        (0..8).for_each(|i| d[i * 8 + i] = 1.0);
        let dict = Dictionary::new(8, 8, d).unwrap();
        let signals = dense_signals::<f32>(8, 4, s);
        Input::Omp32(OmpCase {
            dict,
            signals,
            count: 4,
            rule: StopRule::Error(0.0),
        })
    });
    add(&mut v, "omp-edge-sparsity-above-n".into(), p, true, |s| {
        // Sparsity 50 on an 8 x 20 dictionary: capped at min(n, K) = 8 atoms.
        let dict = random_dictionary::<f64>(8, 20, s);
        let signals = dense_signals::<f64>(8, 5, s ^ 1);
        Input::Omp64(OmpCase {
            dict,
            signals,
            count: 5,
            rule: StopRule::Sparsity(50),
        })
    });
    add(&mut v, "omp-edge-sparsity0".into(), p, true, |s| {
        Input::Omp32(omp_random(16, 32, 4, 3, 0.01, StopRule::Sparsity(0), s))
    });
    add(&mut v, "omp-edge-duplicate-atoms".into(), p, true, |s| {
        // Atom 10 duplicates atom 3: the exact tie goes to 3, after which 10 is
        // orthogonal to the residual.
        let base = random_dictionary::<f64>(16, 24, s);
        let mut d = base.data().to_vec();
        for i in 0..16 {
            d[i * 24 + 10] = d[i * 24 + 3];
        }
        let dict = Dictionary::new(16, 24, d).unwrap();
        let mut x = vec![0.0f64; 16];
        for (j, g) in [(3usize, 2.0f64), (7, -1.0), (20, 0.5)] {
            for i in 0..16 {
                x[i] += g * dict.data()[i * 24 + j];
            }
        }
        Input::Omp64(OmpCase {
            dict,
            signals: x,
            count: 1,
            rule: StopRule::SparsityOrError {
                sparsity: 3,
                error: 1e-18,
            },
        })
    });
    // Nearly dependent atoms and the ends of the number range, in both
    // precisions (the conformance suite also asserts their exact answers).
    for e in super::edges::omp_edges::<f32>() {
        add(&mut v, e.name, p, true, move |_| {
            Input::Omp32(e.case.clone())
        });
    }
    for e in super::edges::omp_edges::<f64>() {
        add(&mut v, e.name, p, true, move |_| {
            Input::Omp64(e.case.clone())
        });
    }
    v
}

/// The contract's SparseCoder benchmark cases at full size ([`crate::cases::spec_cases`]).
pub(crate) fn omp_spec_cases() -> Vec<Case> {
    let p = "sparse_coder";
    let mut v = Vec::new();
    add(&mut v, "omp-64x256-k16".into(), p, false, |s| {
        Input::Omp32(omp_dct(1_000_000, s))
    });
    add(&mut v, "omp-256x1024-k32".into(), p, false, |s| {
        Input::Omp32(omp_dct_256(100_000, s))
    });
    v
}
