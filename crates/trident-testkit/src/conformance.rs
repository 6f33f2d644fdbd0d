//! The conformance suite, written once and run by every backend.
//!
//! One function per primitive ([`dense_gemm`], [`sparse_gemm`],
//! [`nearest_pairs`], [`sparse_coder`], [`max_flow`]) runs, against the
//! reference backend:
//! 1. known answers worked out by hand (so the suite means something even when
//!    the backend under test *is* the reference);
//! 2. every [`Size::Small`] catalog case, random and edge ([`crate::cases`]);
//! 3. randomized equivalence with `proptest`'s [`TestRunner`] over small
//!    shapes (seeded from `TRIDENT_SEED`, shrinking to a minimal failing input);
//! 4. determinism: the same input twice gives bit-identical output.
//!
//! One function per primitive checks bad input ([`bad_input_dense_gemm`], ...):
//! each bad-input class SPEC names, on every trait method that takes user data,
//! must give its specific [`Error`] variant and leave the output buffer
//! untouched (the buffer is poisoned first and compared after). Constructor
//! checks (`CsrMatrix::new`, `Dictionary::new`, `GridGraph::new_2d`,
//! `FlowNetwork::new`, ...) are included, since those types are what make a
//! backend's input valid.
//!
//! # Skipped is not passed
//! A backend answering [`Error::Unsupported`] (f64 on wgpu, a primitive not
//! built yet), or a reference that cannot answer yet, makes that part
//! *skipped*. libtest has no "skipped" result, so the test passes but prints
//! `SKIPPED: <backend> <suite>: <reason>` straight to the process's stderr
//! (not through libtest's capture, so it shows in every run), and
//! [`SuiteReport::outcome`] says [`Outcome::Skipped`] or
//! [`Outcome::PassedWithSkips`]. A backend that cannot be constructed here
//! ([`Error::BackendUnavailable`]) is skipped the same way, unless it is named
//! in `TRIDENT_REQUIRE_BACKENDS` (comma list, or `all`), which turns it into a
//! failure (for CI machines that have the hardware).
//!
//! # Use
//! ```text
//! // crates/trident-rayon/tests/conformance.rs
//! trident_testkit::conformance_tests!(rayon, trident_rayon::RayonBackend::new());
//! ```
//! stamps `rayon::dense_gemm`, ..., `rayon::max_flow` and `rayon::bad_input`
//! tests. Failures print the seed and a one-line reproduction.

use std::cell::RefCell;
use std::io::Write;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use trident_core::{
    Arc, CsrMatrix, DenseGemm, Dictionary, Error, FlowNetwork, GemmParams, GridGraph, MatMut,
    MatRef, Neighbor, Op, Point, Precision, Primitives, Result, Scalar, SparseCoder, SparseGemm,
    StopRule,
};
use trident_reference::ReferenceBackend;

use crate::cases::{self, Input, Size};
use crate::check::{self, Verdict};

/// Environment variable naming backends whose unavailability is a failure.
pub const REQUIRE_ENV: &str = "TRIDENT_REQUIRE_BACKENDS";
/// Environment variable overriding the number of randomized cases per suite.
pub const PROPTEST_CASES_ENV: &str = "TRIDENT_PROPTEST_CASES";
/// Randomized cases per suite when [`PROPTEST_CASES_ENV`] is unset.
pub const DEFAULT_PROPTEST_CASES: u32 = 24;

/// How a suite run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every check ran and passed.
    Passed,
    /// Some checks passed, some were skipped (unsupported); none failed.
    PassedWithSkips,
    /// Nothing ran: everything was skipped.
    Skipped,
    /// At least one check failed.
    Failed,
}

/// What one suite found on one backend.
#[derive(Clone, Debug)]
pub struct SuiteReport {
    /// Suite name, e.g. `"dense_gemm"` or `"bad_input_max_flow"`.
    pub suite: &'static str,
    /// The backend's [`trident_core::Backend::name`].
    pub backend: String,
    /// The base seed used.
    pub seed: u64,
    /// Number of checks that passed.
    pub passed: usize,
    /// One message per failed check, each with a reproduction line.
    pub failures: Vec<String>,
    /// One line per skipped part, with the reason.
    pub skips: Vec<String>,
}

impl SuiteReport {
    fn new(suite: &'static str, backend: &dyn Primitives) -> Self {
        Self {
            suite,
            backend: backend.name().to_string(),
            seed: crate::seed_from_env(),
            passed: 0,
            failures: Vec::new(),
            skips: Vec::new(),
        }
    }

    /// The overall result.
    pub fn outcome(&self) -> Outcome {
        match (
            self.failures.is_empty(),
            self.passed > 0,
            self.skips.is_empty(),
        ) {
            (false, _, _) => Outcome::Failed,
            (true, _, true) => Outcome::Passed,
            (true, true, false) => Outcome::PassedWithSkips,
            (true, false, false) => Outcome::Skipped,
        }
    }

    /// A human-readable account: one headline, then failures and skips.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} {}: {:?}: {} passed, {} failed, {} skipped (TRIDENT_SEED={:#x})",
            self.backend,
            self.suite,
            self.outcome(),
            self.passed,
            self.failures.len(),
            self.skips.len(),
            self.seed
        );
        for f in &self.failures {
            s.push_str(&format!("\n  FAIL: {f}"));
        }
        for k in &self.skips {
            s.push_str(&format!("\n  SKIPPED: {k}"));
        }
        s
    }

    /// Ends a `#[test]`: prints skips to stderr (bypassing libtest's capture,
    /// so they are seen), and panics with the summary if anything failed.
    pub fn finish(self) {
        if !self.skips.is_empty() {
            let mut e = std::io::stderr().lock();
            for k in &self.skips {
                let _ = writeln!(e, "SKIPPED: {} {}: {k}", self.backend, self.suite);
            }
        }
        if self.outcome() == Outcome::Failed {
            panic!("{}", self.summary());
        }
    }

    fn pass(&mut self) {
        self.passed += 1;
    }
    fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }
    fn skip(&mut self, msg: String) {
        self.skips.push(msg);
    }
    fn verify_repro(&self, primitive: &str, case: &str) -> String {
        format!(
            "repro: trident verify --backend {} --primitive {primitive} --case {case} --seed {:#x}",
            self.backend, self.seed
        )
    }
    fn test_repro(&self) -> String {
        format!(
            "repro: TRIDENT_SEED={:#x} cargo test -- {}",
            self.seed, self.suite
        )
    }
}

/// Constructs a backend with `ctor` and runs `suite` on it, for the
/// `#[test]`s [`conformance_tests!`](crate::conformance_tests) stamps.
/// An unavailable backend is skipped (printed) unless required by
/// [`REQUIRE_ENV`].
pub fn run_test<B: Primitives + 'static>(
    backend: &str,
    suite: fn(&dyn Primitives) -> SuiteReport,
    ctor: impl FnOnce() -> Result<B>,
) {
    match ctor() {
        Ok(b) => suite(&b).finish(),
        Err(Error::BackendUnavailable(reason)) => {
            if required(backend) {
                panic!("backend {backend} is required ({REQUIRE_ENV}) but unavailable: {reason}");
            }
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED: backend {backend} unavailable: {reason}"
            );
        }
        Err(e) => panic!("constructing backend {backend} failed: {e}"),
    }
}

fn required(backend: &str) -> bool {
    std::env::var(REQUIRE_ENV)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .any(|n| n == backend || n == "all")
        })
        .unwrap_or(false)
}

fn proptest_cases() -> u32 {
    std::env::var(PROPTEST_CASES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PROPTEST_CASES)
}

/// Stamps the conformance tests for one backend: one `#[test]` per primitive
/// and one for bad input, in a module named after the backend.
///
/// `$ctor` is an expression of type `trident_core::Result<B>` with
/// `B: Primitives + 'static` (a backend constructor such as
/// `RayonBackend::new()`); it is evaluated once per test.
///
/// ```text
/// trident_testkit::conformance_tests!(rayon, trident_rayon::RayonBackend::new());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($name:ident, $ctor:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance as __c;
            #[test]
            fn dense_gemm() {
                __c::run_test(stringify!($name), __c::dense_gemm, || $ctor)
            }
            #[test]
            fn sparse_gemm() {
                __c::run_test(stringify!($name), __c::sparse_gemm, || $ctor)
            }
            #[test]
            fn nearest_pairs() {
                __c::run_test(stringify!($name), __c::nearest_pairs, || $ctor)
            }
            #[test]
            fn sparse_coder() {
                __c::run_test(stringify!($name), __c::sparse_coder, || $ctor)
            }
            #[test]
            fn max_flow() {
                __c::run_test(stringify!($name), __c::max_flow, || $ctor)
            }
            #[test]
            fn bad_input() {
                __c::run_test(stringify!($name), __c::bad_input, || $ctor)
            }
        }
    };
}

// ------------------------------------------------------------ shared runner

/// Runs one input on the backend and the reference and compares. `Ok(None)`
/// passed, `Ok(Some(reason))` skipped, `Err(msg)` failed.
fn run_input(b: &dyn Primitives, input: &Input) -> std::result::Result<Option<String>, String> {
    let exp = match check::expected(&ReferenceBackend, input) {
        Ok(e) => e,
        Err(e) if check::is_unsupported(&e) => return Ok(Some(format!("reference: {e}"))),
        Err(e) => return Err(format!("the reference failed on valid input: {e}")),
    };
    let got = match check::produce(b, input) {
        Ok(g) => g,
        Err(e) if check::is_unsupported(&e) => return Ok(Some(e.to_string())),
        Err(e) => return Err(format!("error on valid input: {e}")),
    };
    let v: Verdict = check::compare(input, &exp, &got);
    if v.passed() {
        Ok(None)
    } else {
        Err(v.summary())
    }
}

fn run_catalog(r: &mut SuiteReport, b: &dyn Primitives, primitive: &'static str) {
    let seed = r.seed;
    for case in cases::cases(primitive, Size::Small) {
        let input = case.input(seed);
        match run_input(b, &input) {
            Ok(None) => r.pass(),
            Ok(Some(why)) => r.skip(format!("{}: {why}", case.name)),
            Err(msg) => {
                let repro = r.verify_repro(primitive, &case.name);
                r.fail(format!(
                    "case {} ({}): {msg}\n    {repro}",
                    case.name,
                    input.describe()
                ));
            }
        }
    }
}

fn run_determinism(r: &mut SuiteReport, b: &dyn Primitives, primitive: &'static str) {
    let Some(case) = cases::cases(primitive, Size::Small)
        .into_iter()
        .find(|c| !c.edge)
    else {
        return;
    };
    let input = case.input(r.seed);
    let first = check::produce(b, &input);
    let second = check::produce(b, &input);
    match (first, second) {
        (Ok(x), Ok(y)) if x == y => r.pass(),
        (Ok(_), Ok(_)) => {
            let repro = r.verify_repro(primitive, &case.name);
            r.fail(format!(
                "case {}: two runs on the same input differ (SPEC: bit-identical)\n    {repro}",
                case.name
            ))
        }
        (Err(e), _) | (_, Err(e)) if check::is_unsupported(&e) => {
            r.skip(format!("determinism on {}: {e}", case.name))
        }
        (Err(e), _) | (_, Err(e)) => {
            r.fail(format!("case {}: error on valid input: {e}", case.name))
        }
    }
}

/// Randomized equivalence: `build` turns a strategy value into an input.
fn run_random<S>(
    r: &mut SuiteReport,
    b: &dyn Primitives,
    strategy: S,
    build: impl Fn(&S::Value) -> Input,
) where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let mut bytes = [0u8; 32];
    let mix = cases::case_seed(r.seed, r.suite);
    bytes[..8].copy_from_slice(&mix.to_le_bytes());
    bytes[8..16].copy_from_slice(&r.seed.to_le_bytes());
    let config = Config {
        cases: proptest_cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let skipped: RefCell<Option<String>> = RefCell::new(None);
    let result = runner.run(&strategy, |v| {
        let input = build(&v);
        match run_input(b, &input) {
            Ok(None) => Ok(()),
            Ok(Some(why)) => {
                skipped.borrow_mut().get_or_insert(why);
                Ok(())
            }
            Err(msg) => Err(TestCaseError::fail(format!(
                "{msg} [input: {}]",
                input.describe()
            ))),
        }
    });
    match result {
        Ok(()) => match skipped.into_inner() {
            Some(why) => r.skip(format!("randomized cases (some or all): {why}")),
            None => r.pass(),
        },
        Err(TestError::Fail(why, value)) => {
            let repro = r.test_repro();
            r.fail(format!(
                "randomized equivalence, minimal failing input {value:?}: {why}\n    {repro}"
            ))
        }
        Err(TestError::Abort(why)) => r.fail(format!("randomized run aborted: {why}")),
    }
}

/// Records a hand-worked known answer.
fn known(r: &mut SuiteReport, label: &str, got: Result<bool>) {
    match got {
        Ok(true) => r.pass(),
        Ok(false) => r.fail(format!("known answer {label}: wrong result")),
        Err(e) if check::is_unsupported(&e) => r.skip(format!("known answer {label}: {e}")),
        Err(e) => r.fail(format!("known answer {label}: error {e}")),
    }
}

// ------------------------------------------------------------- the suites

fn gemm_known<T: Scalar>(b: &dyn Primitives) -> Result<bool>
where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let f = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let a = f(&[1.0, 2.0, 3.0, 4.0]);
    let bb = f(&[5.0, 6.0, 7.0, 8.0]);
    let mut c = f(&[1.0, 1.0, 1.0, 1.0]);
    let p = GemmParams {
        alpha: T::from_f64(2.0),
        beta: T::from_f64(-1.0),
        ..GemmParams::default()
    };
    DenseGemm::<T>::gemm(
        b,
        &p,
        MatRef::dense(&a, 2, 2)?,
        MatRef::dense(&bb, 2, 2)?,
        MatMut::dense(&mut c, 2, 2)?,
    )?;
    let ok1 = c == f(&[37.0, 43.0, 85.0, 99.0]);
    let mut c = vec![T::from_f64(f64::NAN); 4];
    let p = GemmParams {
        op_a: Op::T,
        ..GemmParams::default()
    };
    DenseGemm::<T>::gemm(
        b,
        &p,
        MatRef::dense(&a, 2, 2)?,
        MatRef::dense(&bb, 2, 2)?,
        MatMut::dense(&mut c, 2, 2)?,
    )?;
    Ok(ok1 && c == f(&[26.0, 30.0, 38.0, 44.0]))
}

/// The DenseGemm suite (f32 Strict and Tf32, f64; see the module docs).
pub fn dense_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("dense_gemm", b);
    known(&mut r, "2x2 alpha=2 beta=-1 (f32)", gemm_known::<f32>(b));
    known(&mut r, "2x2 alpha=2 beta=-1 (f64)", gemm_known::<f64>(b));
    run_catalog(&mut r, b, "dense_gemm");
    run_determinism(&mut r, b, "dense_gemm");
    let strategy = (
        (0usize..10, 0usize..10, 0usize..18),
        (
            any::<bool>(),
            any::<bool>(),
            0usize..4,
            0usize..4,
            0usize..3,
        ),
        (0u8..3, any::<u64>()),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((m, n, k), (ta, tb, ai, bi, pad), (kind, seed))| {
            let alpha = [1.0, 0.0, -0.5, 2.25][ai];
            let beta = [0.0, 1.0, 0.5, -3.0][bi];
            let op = |t: bool| if t { Op::T } else { Op::N };
            let prec = if kind == 2 {
                Precision::Tf32
            } else {
                Precision::Strict
            };
            if kind == 1 {
                let p = GemmParams {
                    alpha,
                    beta,
                    op_a: op(ta),
                    op_b: op(tb),
                    precision: prec,
                };
                Input::Gemm64(cases::gemm_general(m, n, k, p, pad, seed))
            } else {
                let p = GemmParams {
                    alpha: alpha as f32,
                    beta: beta as f32,
                    op_a: op(ta),
                    op_b: op(tb),
                    precision: prec,
                };
                Input::Gemm32(cases::gemm_general(m, n, k, p, pad, seed))
            }
        },
    );
    r
}

/// The SparseGemm suite (f32 and f64).
pub fn sparse_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("sparse_gemm", b);
    let k = || -> Result<bool> {
        let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0f64), (0, 1, 2.0), (1, 1, 3.0)])?;
        let c = SparseGemm::<f64>::spgemm(b, &a, &a)?;
        Ok(c.offsets() == [0, 2, 3] && c.indices() == [0, 1, 1] && c.values() == [1.0, 8.0, 9.0])
    };
    known(&mut r, "[[1,2],[0,3]]^2", k());
    run_catalog(&mut r, b, "sparse_gemm");
    run_determinism(&mut r, b, "sparse_gemm");
    let strategy = (
        (0usize..14, 0usize..14, 0usize..14),
        (0u32..=100, any::<bool>(), any::<bool>(), any::<u64>()),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((m, k, n), (dens, zeros, f64s, seed))| {
            let d = dens as f64 / 100.0;
            if f64s {
                Input::Spgemm64(cases::SpgemmCase {
                    a: cases::random_csr(m, k, d, zeros, seed),
                    b: cases::random_csr(k, n, d, zeros, seed ^ 1),
                })
            } else {
                Input::Spgemm32(cases::SpgemmCase {
                    a: cases::random_csr(m, k, d, zeros, seed),
                    b: cases::random_csr(k, n, d, zeros, seed ^ 1),
                })
            }
        },
    );
    r
}

fn random_points(n: usize, mode: u8, seed: u64) -> Vec<Point> {
    let mut rng = cases::rng(seed);
    use rand::Rng;
    match mode {
        // Uniform integer coordinates.
        0 => cases::uniform_points(n, seed),
        // A 4^3 lattice: heavy exact ties.
        1 => (0..n)
            .map(|_| [0, 0, 0].map(|_: i32| rng.random_range(0..4) as f32))
            .collect(),
        // Few distinct points, repeated.
        _ => {
            let base = cases::uniform_points(3, seed);
            (0..n).map(|i| base[i % 3]).collect()
        }
    }
}

/// The NearestPairs suite (nearest, knn, closest_pairs).
pub fn nearest_pairs(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("nearest_pairs", b);
    let k = || -> Result<bool> {
        let a = [[0.0f32, 0.0, 0.0], [10.0, 0.0, 0.0]];
        let bb = [[9.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]];
        let mut out = [Neighbor::default(); 2];
        b.nearest(&a, &bb, &mut out)?;
        let mut kn = [Neighbor::default(); 4];
        b.knn(&a, &bb, 2, &mut kn)?;
        let pairs = b.closest_pairs(&a, &bb, 5)?;
        Ok(out
            == [
                Neighbor { index: 1, d2: 1.0 },
                Neighbor { index: 0, d2: 1.0 },
            ]
            && kn.iter().map(|n| n.index).collect::<Vec<_>>() == [1, 2, 0, 1]
            && pairs.iter().map(|p| (p.a, p.b, p.d2)).collect::<Vec<_>>()
                == [(0, 1, 1.0), (1, 0, 1.0)])
    };
    known(&mut r, "two queries, tie to the smaller index", k());
    run_catalog(&mut r, b, "nearest_pairs");
    run_determinism(&mut r, b, "nearest_pairs");
    let strategy = (
        0usize..40,
        1usize..40,
        0usize..64,
        0usize..50,
        0u8..3,
        any::<u64>(),
    );
    run_random(&mut r, b, strategy, |&(na, nb, kf, pk, mode, seed)| {
        Input::Pairs(cases::PairsCase {
            a: random_points(na, mode, seed),
            b: random_points(nb, mode, seed ^ 1),
            knn_k: kf % (nb + 1),
            pairs_k: pk,
        })
    });
    r
}

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

/// The MaxFlow suite (2-D and 3-D grids, general networks).
pub fn max_flow(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("max_flow", b);
    let k = || -> Result<bool> {
        let g = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0])?;
        let cut = b.grid_cut(&g)?;
        let n = FlowNetwork::new(
            3,
            0,
            2,
            vec![
                Arc {
                    from: 0,
                    to: 1,
                    cap: 2,
                },
                Arc {
                    from: 1,
                    to: 2,
                    cap: 1,
                },
            ],
        )?;
        let f = b.network_flow(&n)?;
        Ok(cut.flow == 3
            && cut.source_side == [true, false]
            && f.flow == 1
            && f.arc_flow == [1, 1]
            && f.source_side == [true, true, false])
    };
    known(&mut r, "1 x 2 grid and a 3-node path", k());
    run_catalog(&mut r, b, "max_flow");
    run_determinism(&mut r, b, "max_flow");
    let strategy = (
        (0usize..7, 0usize..7, 1usize..4, any::<bool>()),
        (
            0i64..20,
            2usize..25,
            0usize..80,
            any::<bool>(),
            any::<u64>(),
        ),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((h, w, d, three), (cap, nodes, arcs, grid, seed))| {
            if grid {
                Input::Grid(cases::random_grid(d, h, w, three, cap, seed))
            } else {
                Input::Network(cases::random_network(nodes, arcs, cap, seed))
            }
        },
    );
    r
}

// -------------------------------------------------------------- bad input

/// Records that `res` is the error `want` (a predicate with its description).
fn expect_err<T>(
    r: &mut SuiteReport,
    label: &str,
    res: Result<T>,
    want: &str,
    ok: impl Fn(&Error) -> bool,
) {
    match res {
        Err(e) if ok(&e) => r.pass(),
        Err(e) if check::is_unsupported(&e) => r.skip(format!("{label}: {e}")),
        Err(e) => r.fail(format!(
            "{label}: expected {want}, got {e:?}\n    {}",
            r.test_repro()
        )),
        Ok(_) => r.fail(format!(
            "{label}: expected {want}, got Ok\n    {}",
            r.test_repro()
        )),
    }
}

fn dim(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::DimensionMismatch { field: f, .. } if *f == field)
}
fn nonfinite(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::NonFinite { field: f, .. } if *f == field)
}
fn arg(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::InvalidArgument { field: f, .. } if *f == field)
}
fn csr(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::InvalidCsr { field: f, .. } if *f == field)
}
fn negative(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::NegativeCapacity { field: f, .. } if *f == field)
}

/// A GEMM call on bad input must fail with `want` and leave C's buffer bit
/// for bit as it was.
fn gemm_bad<T: Scalar>(
    r: &mut SuiteReport,
    b: &dyn Primitives,
    label: &str,
    p: GemmParams<T>,
    (a, ar, ac): (&[T], usize, usize),
    (bm, br, bc): (&[T], usize, usize),
    (cr, cc): (usize, usize),
    c_init: Option<&[T]>,
    want: (&str, &dyn Fn(&Error) -> bool),
) where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let label = format!("gemm {} {label}", T::NAME);
    let mut c: Vec<T> = match c_init {
        Some(v) => v.to_vec(),
        None => (0..cr * cc)
            .map(|i| T::from_f64(1000.0 + i as f64))
            .collect(),
    };
    let before = c.clone();
    let (Ok(av), Ok(bv)) = (MatRef::dense(a, ar, ac), MatRef::dense(bm, br, bc)) else {
        r.fail(format!("{label}: test setup: bad views"));
        return;
    };
    let res = match MatMut::dense(&mut c, cr, cc) {
        Ok(cv) => DenseGemm::<T>::gemm(b, &p, av, bv, cv),
        Err(e) => Err(e),
    };
    let rejected = res.is_err();
    expect_err(r, &label, res, want.0, want.1);
    if rejected && !bits_equal(&c, &before) {
        r.fail(format!("{label}: C was written although the call failed"));
    }
}

fn bits_equal<T: Scalar>(x: &[T], y: &[T]) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits())
}

fn bad_gemm_for<T: Scalar>(r: &mut SuiteReport, b: &dyn Primitives)
where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let v = |n: usize| {
        (0..n)
            .map(|i| T::from_f64(i as f64 * 0.25 - 1.0))
            .collect::<Vec<T>>()
    };
    let nan = T::from_f64(f64::NAN);
    let inf = T::from_f64(f64::INFINITY);
    let d = GemmParams::<T>::default();
    let (a6, b8) = (v(6), v(8));
    gemm_bad(
        r,
        b,
        "inner dimensions 3 vs 4",
        d,
        (&a6, 2, 3),
        (&b8, 4, 2),
        (2, 2),
        None,
        ("DimensionMismatch{b}", &dim("b")),
    );
    let b6 = v(6);
    gemm_bad(
        r,
        b,
        "C 3x3 for a 2x2 product",
        d,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (3, 3),
        None,
        ("DimensionMismatch{c}", &dim("c")),
    );
    let t = GemmParams { op_a: Op::T, ..d };
    gemm_bad(
        r,
        b,
        "op(A) = A^T mismatched",
        t,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (3, 2),
        None,
        ("DimensionMismatch{b}", &dim("b")),
    );
    let mut an = v(6);
    an[4] = nan;
    gemm_bad(
        r,
        b,
        "NaN in A",
        d,
        (&an, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{a}", &nonfinite("a")),
    );
    let mut bi = v(6);
    bi[1] = inf;
    gemm_bad(
        r,
        b,
        "inf in B",
        d,
        (&a6, 2, 3),
        (&bi, 3, 2),
        (2, 2),
        None,
        ("NonFinite{b}", &nonfinite("b")),
    );
    let pa = GemmParams { alpha: nan, ..d };
    gemm_bad(
        r,
        b,
        "NaN alpha",
        pa,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{alpha}", &nonfinite("alpha")),
    );
    let pb = GemmParams { beta: -inf, ..d };
    gemm_bad(
        r,
        b,
        "-inf beta",
        pb,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{beta}", &nonfinite("beta")),
    );
    let pc = GemmParams { beta: T::ONE, ..d };
    let cn = [T::ONE, T::ONE, nan, T::ONE];
    gemm_bad(
        r,
        b,
        "NaN in C with beta != 0",
        pc,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        Some(&cn),
        ("NonFinite{c}", &nonfinite("c")),
    );
    // Padding is not data: NaN between A's rows must not be an error.
    let mut ap = v(8);
    ap[3] = nan;
    let mut c = vec![T::ZERO; 4];
    let res = (|| {
        let av = MatRef::new(&ap, 2, 3, 4)?;
        DenseGemm::<T>::gemm(
            b,
            &d,
            av,
            MatRef::dense(&b6, 3, 2)?,
            MatMut::dense(&mut c, 2, 2)?,
        )
    })();
    match res {
        Ok(()) => r.pass(),
        Err(e) if check::is_unsupported(&e) => {
            r.skip(format!("gemm {} NaN in padding: {e}", T::NAME))
        }
        Err(e) => r.fail(format!(
            "gemm {}: NaN in A's padding (not part of the view) was rejected: {e}",
            T::NAME
        )),
    }
    // View constructors.
    expect_err(
        r,
        "MatRef::new short slice",
        MatRef::new(&a6, 2, 3, 4),
        "DimensionMismatch{data}",
        dim("data"),
    );
    expect_err(
        r,
        "MatRef::new ld < cols",
        MatRef::new(&a6, 2, 3, 2),
        "DimensionMismatch{ld}",
        dim("ld"),
    );
}

/// Bad input for DenseGemm (f32 and f64).
pub fn bad_input_dense_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_dense_gemm", b);
    bad_gemm_for::<f32>(&mut r, b);
    bad_gemm_for::<f64>(&mut r, b);
    r
}

/// Bad input for SparseGemm: mismatched operands, and every invalid-CSR class
/// `CsrMatrix::new` rejects.
pub fn bad_input_sparse_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_sparse_gemm", b);
    let a = CsrMatrix::<f32>::from_triplets(2, 3, &[(0, 0, 1.0), (1, 2, 2.0)]).expect("valid");
    expect_err(
        &mut r,
        "spgemm f32 A 2x3 * B 2x3",
        SparseGemm::<f32>::spgemm(b, &a, &a),
        "DimensionMismatch{b.rows}",
        dim("b.rows"),
    );
    let a64 = cases::convert::<f32, f64>(&a);
    expect_err(
        &mut r,
        "spgemm f64 A 2x3 * B 2x3",
        SparseGemm::<f64>::spgemm(b, &a64, &a64),
        "DimensionMismatch{b.rows}",
        dim("b.rows"),
    );
    let nw = |o: Vec<usize>, i: Vec<u32>, v: Vec<f64>| CsrMatrix::new(2, 3, o, i, v);
    expect_err(
        &mut r,
        "CSR unsorted row",
        nw(vec![0, 2, 2], vec![2, 0], vec![1.0, 1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR repeated column",
        nw(vec![0, 2, 2], vec![1, 1], vec![1.0, 1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR column out of range",
        nw(vec![0, 1, 1], vec![3], vec![1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR offsets not from 0",
        nw(vec![1, 1, 1], vec![], vec![]),
        "InvalidCsr{offsets}",
        csr("offsets"),
    );
    expect_err(
        &mut r,
        "CSR offsets decreasing",
        nw(vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]),
        "InvalidCsr{offsets}",
        csr("offsets"),
    );
    expect_err(
        &mut r,
        "CSR offsets too short",
        nw(vec![0, 0], vec![], vec![]),
        "DimensionMismatch{offsets}",
        dim("offsets"),
    );
    expect_err(
        &mut r,
        "CSR indices length",
        nw(vec![0, 1, 2], vec![0], vec![1.0, 1.0]),
        "DimensionMismatch{indices}",
        dim("indices"),
    );
    expect_err(
        &mut r,
        "CSR values length",
        nw(vec![0, 1, 1], vec![0], vec![]),
        "DimensionMismatch{values}",
        dim("values"),
    );
    expect_err(
        &mut r,
        "CSR NaN value",
        nw(vec![0, 1, 1], vec![0], vec![f64::NAN]),
        "NonFinite{values}",
        nonfinite("values"),
    );
    expect_err(
        &mut r,
        "from_triplets row out of range",
        CsrMatrix::from_triplets(2, 2, &[(2, 0, 1.0f32)]),
        "InvalidCsr{triplets}",
        csr("triplets"),
    );
    r
}

/// Bad input for NearestPairs: empty B, wrong output length, k > |B|,
/// non-finite coordinates, on each method; outputs untouched.
pub fn bad_input_nearest_pairs(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_nearest_pairs", b);
    let a: Vec<Point> = vec![[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]];
    let bb: Vec<Point> = vec![[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]];
    let mut an = a.clone();
    an[1][2] = f32::NAN;
    let mut bi = bb.clone();
    bi[0][0] = f32::INFINITY;
    let poison = Neighbor {
        index: 0xDEAD,
        d2: -1.0,
    };
    let nearest_case = |r: &mut SuiteReport,
                        label: &str,
                        qa: &[Point],
                        qb: &[Point],
                        out_len: usize,
                        want: &str,
                        ok: &dyn Fn(&Error) -> bool| {
        let mut out = vec![poison; out_len];
        let res = b.nearest(qa, qb, &mut out);
        let rejected = res.is_err();
        expect_err(r, &format!("nearest {label}"), res, want, ok);
        if rejected && out.iter().any(|n| *n != poison) {
            r.fail(format!(
                "nearest {label}: out was written although the call failed"
            ));
        }
    };
    nearest_case(
        &mut r,
        "B empty",
        &a,
        &[],
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    nearest_case(
        &mut r,
        "out too short",
        &a,
        &bb,
        2,
        "DimensionMismatch{out}",
        &dim("out"),
    );
    nearest_case(
        &mut r,
        "NaN in A",
        &an,
        &bb,
        3,
        "InvalidArgument{a}",
        &arg("a"),
    );
    nearest_case(
        &mut r,
        "inf in B",
        &a,
        &bi,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    let knn_case = |r: &mut SuiteReport,
                    label: &str,
                    qa: &[Point],
                    qb: &[Point],
                    k: usize,
                    out_len: usize,
                    want: &str,
                    ok: &dyn Fn(&Error) -> bool| {
        let mut out = vec![poison; out_len];
        let res = b.knn(qa, qb, k, &mut out);
        let rejected = res.is_err();
        expect_err(r, &format!("knn {label}"), res, want, ok);
        if rejected && out.iter().any(|n| *n != poison) {
            r.fail(format!(
                "knn {label}: out was written although the call failed"
            ));
        }
    };
    knn_case(
        &mut r,
        "k > |B|",
        &a,
        &bb,
        3,
        9,
        "InvalidArgument{k}",
        &arg("k"),
    );
    knn_case(
        &mut r,
        "B empty",
        &a,
        &[],
        1,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    knn_case(
        &mut r,
        "out length",
        &a,
        &bb,
        2,
        5,
        "DimensionMismatch{out}",
        &dim("out"),
    );
    knn_case(
        &mut r,
        "NaN in A",
        &an,
        &bb,
        1,
        3,
        "InvalidArgument{a}",
        &arg("a"),
    );
    knn_case(
        &mut r,
        "inf in B",
        &a,
        &bi,
        1,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    expect_err(
        &mut r,
        "closest_pairs B empty",
        b.closest_pairs(&a, &[], 2),
        "InvalidArgument{b}",
        arg("b"),
    );
    expect_err(
        &mut r,
        "closest_pairs NaN in A",
        b.closest_pairs(&an, &bb, 2),
        "InvalidArgument{a}",
        arg("a"),
    );
    expect_err(
        &mut r,
        "closest_pairs inf in B",
        b.closest_pairs(&a, &bi, 2),
        "InvalidArgument{b}",
        arg("b"),
    );
    r
}

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

/// Bad input for MaxFlow: the grid and network constructors (negative
/// capacities, s == t, border arcs, lengths, overflow) and DIMACS parsing.
/// The trait methods take only valid-by-construction graphs; a backend is run
/// on the valid neighbours of these inputs to show they are accepted.
pub fn bad_input_max_flow(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_max_flow", b);
    let z = |n: usize| vec![0i64; n];
    expect_err(
        &mut r,
        "grid negative source",
        GridGraph::new_2d(1, 2, vec![1, -1], z(2), z(8)),
        "NegativeCapacity{source}",
        negative("source"),
    );
    expect_err(
        &mut r,
        "grid negative sink",
        GridGraph::new_2d(1, 2, z(2), vec![-5, 0], z(8)),
        "NegativeCapacity{sink}",
        negative("sink"),
    );
    expect_err(
        &mut r,
        "grid negative arc",
        GridGraph::new_2d(1, 2, z(2), z(2), vec![-1, 0, 0, 0, 0, 0, 0, 0]),
        "NegativeCapacity{caps}",
        negative("caps"),
    );
    expect_err(
        &mut r,
        "grid arc off the border",
        GridGraph::new_2d(1, 2, z(2), z(2), vec![0, 3, 0, 0, 0, 0, 0, 0]),
        "InvalidArgument{caps}",
        arg("caps"),
    );
    expect_err(
        &mut r,
        "grid caps length",
        GridGraph::new_2d(1, 2, z(2), z(2), z(6)),
        "DimensionMismatch{caps}",
        dim("caps"),
    );
    expect_err(
        &mut r,
        "grid source length",
        GridGraph::new_2d(2, 2, z(3), z(4), z(16)),
        "DimensionMismatch{source}",
        dim("source"),
    );
    expect_err(
        &mut r,
        "3-D grid caps length",
        GridGraph::new_3d(2, 1, 1, z(2), z(2), z(8)),
        "DimensionMismatch{caps}",
        dim("caps"),
    );
    expect_err(
        &mut r,
        "grid capacity sum overflows i64",
        GridGraph::new_2d(1, 2, vec![i64::MAX, 1], z(2), z(8)),
        "TooLarge",
        |e| matches!(e, Error::TooLarge { .. }),
    );
    let arcs = |v: &[(u32, u32, i64)]| {
        v.iter()
            .map(|&(from, to, cap)| Arc { from, to, cap })
            .collect::<Vec<_>>()
    };
    expect_err(
        &mut r,
        "network s == t",
        FlowNetwork::new(3, 1, 1, arcs(&[(0, 1, 1)])),
        "InvalidArgument{sink}",
        arg("sink"),
    );
    expect_err(
        &mut r,
        "network negative capacity",
        FlowNetwork::new(3, 0, 2, arcs(&[(0, 1, 1), (1, 2, -4)])),
        "NegativeCapacity{arcs.cap}",
        negative("arcs.cap"),
    );
    expect_err(
        &mut r,
        "network endpoint out of range",
        FlowNetwork::new(3, 0, 2, arcs(&[(0, 3, 1)])),
        "InvalidArgument{arcs}",
        arg("arcs"),
    );
    expect_err(
        &mut r,
        "network s out of range",
        FlowNetwork::new(3, 5, 2, vec![]),
        "InvalidArgument{source}",
        arg("source"),
    );
    expect_err(
        &mut r,
        "DIMACS missing p line",
        FlowNetwork::read_dimacs("n 1 s\n".as_bytes()),
        "Parse",
        |e| matches!(e, Error::Parse { .. }),
    );
    expect_err(
        &mut r,
        "DIMACS arc count",
        FlowNetwork::read_dimacs("p max 2 2\nn 1 s\nn 2 t\na 1 2 3\n".as_bytes()),
        "Parse",
        |e| matches!(e, Error::Parse { .. }),
    );
    // The zero-capacity neighbours of those inputs are valid and solvable.
    let ok = (|| -> Result<bool> {
        let g = GridGraph::new_2d(1, 2, vec![1, 0], z(2), z(8))?;
        let n = FlowNetwork::new(3, 0, 2, arcs(&[(0, 1, 1), (1, 2, 0)]))?;
        Ok(b.grid_cut(&g)?.flow == 0 && b.network_flow(&n)?.flow == 0)
    })();
    known(&mut r, "zero-capacity neighbours of the bad inputs", ok);
    r
}

/// All five bad-input groups in one report (what the stamped `bad_input`
/// test runs).
pub fn bad_input(b: &dyn Primitives) -> SuiteReport {
    let mut all = SuiteReport::new("bad_input", b);
    for f in [
        bad_input_dense_gemm,
        bad_input_sparse_gemm,
        bad_input_nearest_pairs,
        bad_input_sparse_coder,
        bad_input_max_flow,
    ] {
        let r = f(b);
        all.passed += r.passed;
        all.failures
            .extend(r.failures.into_iter().map(|m| format!("{}: {m}", r.suite)));
        all.skips
            .extend(r.skips.into_iter().map(|m| format!("{}: {m}", r.suite)));
    }
    all
}

/// A suite: runs on one backend and reports.
pub type Suite = fn(&dyn Primitives) -> SuiteReport;

/// Every suite in [`trident_core::PRIMITIVES`] order, then [`bad_input`].
pub const SUITES: [(&str, Suite); 6] = [
    ("dense_gemm", dense_gemm),
    ("sparse_gemm", sparse_gemm),
    ("nearest_pairs", nearest_pairs),
    ("sparse_coder", sparse_coder),
    ("max_flow", max_flow),
    ("bad_input", bad_input),
];
