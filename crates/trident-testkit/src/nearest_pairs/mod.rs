//! NearestPairs in the test kit, in one folder: `generate` (input generators),
//! `catalog` (the named cases), `check` (the checker, under
//! `docs/tolerances.md`), `conformance` (the suite every backend runs) and
//! `device` (a GPU backend's kept index against its plain device calls).
//! The reference's independent certificates are separate, in
//! `trident_reference::certify`.

pub(crate) mod catalog;
pub mod check;
pub mod conformance;
pub mod device;
pub mod generate;
pub mod problem;

/// This primitive's entry in [`crate::suites::PRIMITIVE_SUITES`].
pub const SUITE: crate::suites::PrimitiveSuite = crate::suites::PrimitiveSuite {
    primitive: trident_core::Primitive::NearestPairs,
    cases: catalog::pairs_cases,
    spec_cases: catalog::pairs_spec_cases,
    conformance: conformance::nearest_pairs,
    bad_input: conformance::bad_input_nearest_pairs,
};
