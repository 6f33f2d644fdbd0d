//! # trident-testkit
//!
//! The one place the test machinery of Trident lives, shared by every
//! backend's tests, `trident verify` / `cargo xtask verify`, and the benches:
//!
//! | module | what |
//! | --- | --- |
//! | [`cases`] | deterministic generators for every benchmark case (small and large), named edge cases, file output for the Python peers |
//! | [`check`] | compares a backend's output with the reference's under the contract's tolerances |
//! | [`conformance`] | the suite every backend runs, and [`conformance_tests!`] to stamp it into `#[test]`s |
//! | [`verify`] | runs every case on every backend and prints the table |
//! | [`timing`] | wall-time medians, the one statistic `trident bench` and the bench programs report |
//! | [`peers`] | the results file of `benches/peers.py` (the Python peers' timings) |
//! | [`problem`] | the [`problem::Problem`] trait each primitive implements for its inputs (run, expected answer, compare, certify, write), and [`problem::Input`] holding any of them |
//! | [`suites`] | what one primitive gives the shared machinery ([`suites::PrimitiveSuite`]): its catalog cases and conformance suites |
//! | [`registry`] | the one module that names the primitive folders: [`registry::PRIMITIVE_SUITES`], [`conformance_tests!`], and the primitive items re-exported under the shared modules' paths |
//! | [`dense_gemm`], [`sparse_gemm`], [`nearest_pairs`], [`sparse_coder`], [`max_flow`] | one folder per primitive: its generators, catalog cases, checker, `Problem` implementations and conformance suite (re-exported by the modules above through [`registry`]) |
//!
//! Dependencies point one way: the folders use the shared modules, the
//! registry reads the folders, and the shared modules never name a folder
//! (`tests/shared_parts.rs` keeps it so).
//!
//! It is not a benchmark harness (it holds only the timers and peers-file
//! format that `trident bench` and the bench programs share),
//! and it never decides what is correct by itself: the reference backend does,
//! and the reference is checked by its own certificates.
#![warn(missing_docs)]

pub mod cases;
pub mod check;
pub mod conformance;
pub mod peers;
pub mod problem;
pub mod registry;
pub mod suites;
pub mod timing;
pub mod verify;

pub mod dense_gemm;
pub mod max_flow;
pub mod nearest_pairs;
pub mod sparse_coder;
pub mod sparse_gemm;

/// The environment variable holding the base seed (decimal or `0x` hex).
pub const SEED_ENV: &str = "TRIDENT_SEED";
/// The base seed when [`SEED_ENV`] is unset: fixed, so CI is reproducible.
pub const DEFAULT_SEED: u64 = 0x7121_de5e_ed00_0001;

/// The base seed from `TRIDENT_SEED`, or [`DEFAULT_SEED`].
///
/// Panics on an unparsable value rather than silently using another seed.
pub fn seed_from_env() -> u64 {
    match std::env::var(SEED_ENV) {
        Ok(s) => parse_seed(&s)
            .unwrap_or_else(|| panic!("{SEED_ENV}={s:?} is not a u64 (decimal or 0x hex)")),
        Err(_) => DEFAULT_SEED,
    }
}

/// Parses a seed written in decimal or `0x` hex.
pub fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => s.replace('_', "").parse().ok(),
    }
}
