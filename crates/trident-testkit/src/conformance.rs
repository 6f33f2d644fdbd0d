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
//! each bad-input class the contract names, on every trait method that takes user data,
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
use trident_core::{Error, Primitives, Result};
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
    pub(crate) fn new(suite: &'static str, backend: &dyn Primitives) -> Self {
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

    pub(crate) fn pass(&mut self) {
        self.passed += 1;
    }
    pub(crate) fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }
    pub(crate) fn skip(&mut self, msg: String) {
        self.skips.push(msg);
    }
    pub(crate) fn verify_repro(&self, primitive: &str, case: &str) -> String {
        format!(
            "repro: trident verify --backend {} --primitive {primitive} --case {case} --seed {:#x}",
            self.backend, self.seed
        )
    }
    pub(crate) fn test_repro(&self) -> String {
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

pub(crate) fn required(backend: &str) -> bool {
    std::env::var(REQUIRE_ENV)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .any(|n| n == backend || n == "all")
        })
        .unwrap_or(false)
}

pub(crate) fn proptest_cases() -> u32 {
    std::env::var(PROPTEST_CASES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PROPTEST_CASES)
}

// ------------------------------------------------------------ shared runner

/// Runs one input on the backend and the reference and compares. `Ok(None)`
/// passed, `Ok(Some(reason))` skipped, `Err(msg)` failed.
pub(crate) fn run_input(
    b: &dyn Primitives,
    input: &Input,
) -> std::result::Result<Option<String>, String> {
    let exp = match input.expected(&ReferenceBackend) {
        Ok(e) => e,
        Err(e) if check::is_unsupported(&e) => return Ok(Some(format!("reference: {e}"))),
        Err(e) => return Err(format!("the reference failed on valid input: {e}")),
    };
    let got = match input.produce(b) {
        Ok(g) => g,
        Err(e) if check::is_unsupported(&e) => return Ok(Some(e.to_string())),
        Err(e) => return Err(format!("error on valid input: {e}")),
    };
    let v: Verdict = input.compare(&exp, &got);
    if v.passed() {
        Ok(None)
    } else {
        Err(v.summary())
    }
}

pub(crate) fn run_catalog(r: &mut SuiteReport, b: &dyn Primitives, primitive: &'static str) {
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

pub(crate) fn run_determinism(r: &mut SuiteReport, b: &dyn Primitives, primitive: &'static str) {
    let Some(case) = cases::cases(primitive, Size::Small)
        .into_iter()
        .find(|c| !c.edge)
    else {
        return;
    };
    run_determinism_case(r, b, primitive, &case, 2);
}

/// Runs `case` `runs` times and asks for bit-identical outputs.
pub(crate) fn run_determinism_case(
    r: &mut SuiteReport,
    b: &dyn Primitives,
    primitive: &'static str,
    case: &cases::Case,
    runs: usize,
) {
    let input = case.input(r.seed);
    let first = match input.produce(b) {
        Ok(x) => x,
        Err(e) if check::is_unsupported(&e) => {
            return r.skip(format!("determinism on {}: {e}", case.name));
        }
        Err(e) => return r.fail(format!("case {}: error on valid input: {e}", case.name)),
    };
    for run in 2..=runs.max(2) {
        match input.produce(b) {
            Ok(y) if y == first => {}
            Ok(_) => {
                let repro = r.verify_repro(primitive, &case.name);
                return r.fail(format!(
                    "case {}: run {run} differs from run 1 on the same input (docs/semantics.md: bit-identical)\n    {repro}",
                    case.name
                ));
            }
            Err(e) => return r.fail(format!("case {}: error on valid input: {e}", case.name)),
        }
    }
    r.pass()
}

/// Randomized equivalence: `build` turns a strategy value into an input.
pub(crate) fn run_random<S>(
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
pub(crate) fn known(r: &mut SuiteReport, label: &str, got: Result<bool>) {
    match got {
        Ok(true) => r.pass(),
        Ok(false) => r.fail(format!("known answer {label}: wrong result")),
        Err(e) if check::is_unsupported(&e) => r.skip(format!("known answer {label}: {e}")),
        Err(e) => r.fail(format!("known answer {label}: error {e}")),
    }
}

// ------------------------------------------------------------- the suites
// Each primitive's suite and bad-input group live in its folder; the
// registry gathers them and they are re-exported here under their old paths.

pub use crate::registry::groups::*;

// -------------------------------------------------------------- bad input

/// Records that `res` is the error `want` (a predicate with its description).
pub(crate) fn expect_err<T>(
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

pub(crate) fn dim(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::DimensionMismatch { field: f, .. } if *f == field)
}
pub(crate) fn nonfinite(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::NonFinite { field: f, .. } if *f == field)
}
pub(crate) fn arg(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::InvalidArgument { field: f, .. } if *f == field)
}
pub(crate) fn csr(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::InvalidCsr { field: f, .. } if *f == field)
}
pub(crate) fn negative(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::NegativeCapacity { field: f, .. } if *f == field)
}

/// Every primitive's bad-input group in one report (what the stamped
/// `bad_input` test runs), in [`crate::registry::PRIMITIVE_SUITES`] order.
pub fn bad_input(b: &dyn Primitives) -> SuiteReport {
    let mut all = SuiteReport::new("bad_input", b);
    for s in &crate::registry::PRIMITIVE_SUITES {
        let r = (s.bad_input)(b);
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

/// Every suite in [`trident_core::PRIMITIVES`] order (from
/// [`crate::registry::PRIMITIVE_SUITES`]), then [`bad_input`].
pub fn suites() -> Vec<(&'static str, Suite)> {
    crate::registry::PRIMITIVE_SUITES
        .iter()
        .map(|s| (s.primitive.name(), s.conformance))
        .chain(std::iter::once(("bad_input", bad_input as Suite)))
        .collect()
}
