//! Batch-OMP on the GPU beyond the conformance suite: the device-resident
//! entry point against the host call (bit for bit, with a padded leading
//! dimension), long codes whose scratch goes to global memory, the 256 x 1024
//! dictionary whose Gram matrix does not fit shared memory, exact answers on
//! an identity dictionary, and shape errors of the device call. Skipped
//! without CUDA.

mod common;

use trident_core::{
    DeviceMat, DeviceMemory, Dictionary, Error, MatRef, SparseCoder, SparseCoderDevice, StopRule,
};
use trident_cuda::{CudaBackend, Tuning};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::{self, Input};
use trident_testkit::check;

use common::{backend, seed};

/// Runs `input` on the GPU and checks it against the reference with the
/// contract's tolerances.
fn agrees(be: &CudaBackend, input: Input) {
    let exp = check::expected(&ReferenceBackend, &input).unwrap();
    let got = check::produce(be, &input).unwrap();
    let v = check::compare(&input, &exp, &got);
    println!(
        "{}: worst error / tolerance = {:.3e}",
        input.describe(),
        v.ratio
    );
    assert!(v.passed(), "{}: {}", input.describe(), v.summary());
}

#[test]
fn device_codes_match_the_host_call() {
    let Some(be) = backend("device_codes_match_the_host_call") else {
        return;
    };
    let c = cases::omp_dct::<f32>(500, seed("device_codes_match_the_host_call"));
    let host = be.encode(&c.dict, c.signals_ref(), c.rule).unwrap();
    // The same signals with 3 unused entries after each row.
    let (n, ld) = (c.dict.n(), c.dict.n() + 3);
    let mut padded = vec![f32::NAN; c.count * ld];
    for i in 0..c.count {
        padded[i * ld..i * ld + n].copy_from_slice(c.signal(i));
    }
    let x = DeviceMat {
        buf: be.upload(&padded).unwrap(),
        rows: c.count,
        cols: n,
        ld,
    };
    let codes = be.encode_device(&c.dict, &x, c.rule).unwrap();
    assert_eq!(codes.signals, c.count);
    assert_eq!(codes.max_atoms, 16);
    let dev = be.download_codes(&codes).unwrap();
    assert!(
        dev == host,
        "device-resident codes differ from the host call"
    );
}

/// Host calls run as a pipeline of chunks (for overlap, and within a memory
/// budget); every chunking gives the codes of one device-resident run, bit
/// for bit, and a budget that cannot hold the dictionary is an
/// out-of-memory error that names it.
#[test]
fn chunked_host_calls_match_one_run() {
    let Some(be) = backend("chunked_host_calls_match_one_run") else {
        return;
    };
    fn check<T: trident_core::Scalar>(be: &CudaBackend, c: &cases::OmpCase<T>, what: &str) {
        let x = DeviceMat {
            buf: be.upload(c.signals.as_slice()).unwrap(),
            rows: c.count,
            cols: c.dict.n(),
            ld: c.dict.n(),
        };
        let one = be
            .download_codes(&be.encode_device(&c.dict, &x, c.rule).unwrap())
            .unwrap();
        // 40,000 signals: 3 chunks for overlap; then about 11,800, 1,000 and
        // 97 signals per chunk within the budget (odd sizes leave a short
        // last chunk).
        for budget in [None, Some(32u64 << 20), Some(3 << 20), Some(1 << 20)] {
            let b = be.tuned(Tuning {
                memory_budget: budget,
                ..Tuning::default()
            });
            let got = b.encode(&c.dict, c.signals_ref(), c.rule).unwrap();
            assert!(got == one, "{what}: budget {budget:?} changed the codes");
        }
        // Rows with 5 unused entries after each: pieces of the staged
        // upload start and end inside rows.
        let (n, ld) = (c.dict.n(), c.dict.n() + 5);
        let mut padded = vec![T::ZERO; c.count * ld];
        for i in 0..c.count {
            padded[i * ld..i * ld + n].copy_from_slice(c.signal(i));
        }
        let view = MatRef::new(&padded, c.count, n, ld).unwrap();
        let b = be.tuned(Tuning {
            memory_budget: Some(3 << 20),
            ..Tuning::default()
        });
        let got = b.encode(&c.dict, view, c.rule).unwrap();
        assert!(got == one, "{what}: padded rows changed the codes");
        // Values are checked chunk by chunk as they go up: the first bad one
        // in row-major order is reported, by its index in the view, in one
        // piece and in chunks.
        padded[39_000 * ld + 2] = T::from_f64(f64::INFINITY);
        padded[33_333 * ld + 7] = T::from_f64(f64::NAN);
        let view = MatRef::new(&padded, c.count, n, ld).unwrap();
        for b in [&b, be] {
            let e = b.encode(&c.dict, view, c.rule).unwrap_err();
            assert!(
                matches!(e, Error::NonFinite { field: "signals", index, .. } if index == 33_333 * ld + 7),
                "{what}: {e}"
            );
        }
        let small = MatRef::new(&padded[..1000 * ld], 1000, n, ld).unwrap();
        assert!(
            b.encode(&c.dict, small, c.rule).is_ok(),
            "{what}: the bad rows are not in view"
        );
        let one_piece = MatRef::new(&padded[33_330 * ld..], 10, n, ld).unwrap();
        let e = be.encode(&c.dict, one_piece, c.rule).unwrap_err();
        assert!(
            matches!(e, Error::NonFinite { field: "signals", index, .. } if index == 3 * ld + 7),
            "{what}: {e}"
        );
        let small = be.tuned(Tuning {
            memory_budget: Some(100 << 10),
            ..Tuning::default()
        });
        let e = small.encode(&c.dict, c.signals_ref(), c.rule).unwrap_err();
        assert!(
            matches!(e, Error::OutOfMemory { .. }) && e.to_string().contains("memory budget"),
            "{what}: {e}"
        );
    }
    let s = seed("chunked_host_calls_match_one_run");
    check(&be, &cases::omp_dct::<f32>(40_000, s), "f32");
    check(&be, &cases::omp_dct::<f64>(40_000, s + 1), "f64");
}

#[test]
fn long_codes_use_global_scratch() {
    let Some(be) = backend("long_codes_use_global_scratch") else {
        return;
    };
    // 100 atoms per signal: the per-warp Cholesky factor (40 KB in f64) no
    // longer fits shared memory for a block of warps.
    let s = seed("long_codes_use_global_scratch");
    agrees(
        &be,
        Input::Omp64(cases::omp_random(
            128,
            256,
            16,
            10,
            0.05,
            StopRule::Sparsity(100),
            s,
        )),
    );
    agrees(
        &be,
        Input::Omp32(cases::omp_random(
            128,
            256,
            16,
            10,
            0.05,
            StopRule::SparsityOrError {
                sparsity: 100,
                error: 1e-3,
            },
            s + 1,
        )),
    );
}

#[test]
fn dct_256x1024_agrees_with_the_reference() {
    let Some(be) = backend("dct_256x1024_agrees_with_the_reference") else {
        return;
    };
    let s = seed("dct_256x1024_agrees_with_the_reference");
    agrees(&be, Input::Omp32(cases::omp_dct_256(64, s)));
    agrees(&be, Input::Omp64(cases::omp_dct_256(16, s + 1)));
}

/// Nearly dependent atoms (1e-7 rad apart: no stop, refined coefficients)
/// and f64 signals beyond the window (scaled per signal, their alpha0
/// recomputed by the warp) among ordinary ones, with a padded leading
/// dimension: the device call gives the host call's codes bit for bit, and
/// both pass the checker against the reference, in f64 and f32.
#[test]
fn near_dependent_and_scaled_signals_on_the_device_path() {
    let Some(be) = backend("near_dependent_and_scaled_signals_on_the_device_path") else {
        return;
    };
    fn run<T: trident_core::Scalar>(be: &CudaBackend, rows: &[[f64; 2]])
    where
        CudaBackend: SparseCoder<T> + SparseCoderDevice<T>,
        trident_testkit::cases::OmpCase<T>: trident_testkit::problem::Problem,
    {
        // Atoms e1 and normalize(e1 + 1e-7 e2).
        let (t, m) = (1e-7f64, (1.0 + 1e-14f64).sqrt());
        let data = [1.0, 1.0 / m, 0.0, t / m].map(T::from_f64).to_vec();
        let dict = Dictionary::new(2, 2, data).unwrap();
        let (n, count, ld) = (2, rows.len(), 5);
        let signals: Vec<T> = rows.iter().flatten().map(|&v| T::from_f64(v)).collect();
        let mut padded = vec![T::ZERO; (count - 1) * ld + n];
        for (r, row) in signals.chunks_exact(n).enumerate() {
            padded[r * ld..r * ld + n].copy_from_slice(row);
        }
        for rule in [
            StopRule::Sparsity(2),
            StopRule::Sparsity(1),
            StopRule::SparsityOrError {
                sparsity: 2,
                error: 1e-30,
            },
        ] {
            let x = DeviceMat {
                buf: be.upload(&padded).unwrap(),
                rows: count,
                cols: n,
                ld,
            };
            let dev = be
                .download_codes(&be.encode_device(&dict, &x, rule).unwrap())
                .unwrap();
            let host = be
                .encode(&dict, MatRef::dense(&signals, count, n).unwrap(), rule)
                .unwrap();
            assert!(
                dev == host,
                "{} {rule:?}: device {dev:?} host {host:?}",
                T::NAME
            );
            agrees(
                be,
                Input::new(trident_testkit::cases::OmpCase {
                    dict: dict.clone(),
                    signals: signals.clone(),
                    count,
                    rule,
                }),
            );
        }
    }
    run::<f64>(
        &be,
        &[
            [1.0, 1.0],
            [0.5, -2.0],
            [1e200, 3e199],
            [1e-200, -3e-201],
            [1e-310, 3e-311],
            [1.5e308, 1e308],
        ],
    );
    run::<f32>(
        &be,
        &[
            [1.0, 1.0],
            [0.5, -2.0],
            [1e20, 3e19],
            [1e-25, -3e-26],
            [1e-40, 3e-41],
            [3e38, 0.0],
        ],
    );
}

#[test]
fn identity_dictionary_is_exact() {
    let Some(be) = backend("identity_dictionary_is_exact") else {
        return;
    };
    let mut d = vec![0.0f32; 36];
    (0..6).for_each(|i| d[i * 6 + i] = 1.0);
    let dict = Dictionary::new(6, 6, d).unwrap();
    let x = [0.5f32, -2.0, 0.0, 2.0, 0.25, -0.5];
    let x = MatRef::dense(&x, 1, 6).unwrap();
    let c = be.encode(&dict, x, StopRule::Error(0.0)).unwrap();
    assert_eq!(c.atoms, [1, 3, 0, 5, 4]);
    assert_eq!(c.coefs, [-2.0, 2.0, 0.5, -0.5, 0.25]);
    assert_eq!(c.residual_norm2, [0.0]);
    let c = be.encode(&dict, x, StopRule::Sparsity(2)).unwrap();
    assert_eq!(c.atoms, [1, 3]);
    assert_eq!(c.coefs, [-2.0, 2.0]);
    assert_eq!(c.residual_norm2, [0.25 + 0.0625 + 0.25]);
}

#[test]
fn device_call_checks_shapes_and_rule() {
    let Some(be) = backend("device_call_checks_shapes_and_rule") else {
        return;
    };
    let dict = cases::dct_dictionary::<f32>(8, 16);
    let x = DeviceMat {
        buf: be.upload(&[0.0f32; 63 * 2]).unwrap(),
        rows: 2,
        cols: 63,
        ld: 63,
    };
    let e = be.encode_device(&dict, &x, StopRule::Sparsity(3));
    assert!(
        matches!(e, Err(Error::DimensionMismatch { .. })),
        "{:?}",
        e.err()
    );
    let x = DeviceMat {
        buf: be.upload(&[0.0f32; 64]).unwrap(),
        rows: 2,
        cols: 64,
        ld: 64,
    };
    let e = be.encode_device(&dict, &x, StopRule::Sparsity(3));
    assert!(
        matches!(e, Err(Error::DimensionMismatch { .. })),
        "{:?}",
        e.err()
    );
    let x = DeviceMat {
        buf: be.upload(&[0.0f32; 64]).unwrap(),
        rows: 1,
        cols: 64,
        ld: 64,
    };
    let e = be.encode_device(&dict, &x, StopRule::Error(-1.0));
    assert!(
        matches!(e, Err(Error::InvalidArgument { .. })),
        "{:?}",
        e.err()
    );
}
