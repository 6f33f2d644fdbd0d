//! SparseCoder (Batch-OMP) in the test kit, in one folder: `generate` (input generators),
//! `edges` (hand-made cases with exact answers), `catalog` (the named cases), `check` (the checker, under
//! `docs/tolerances.md`) and `conformance` (the suite every backend runs).
//! The reference's independent certificates are separate, in
//! `trident_reference::certify`.

pub(crate) mod catalog;
pub mod check;
pub mod conformance;
pub mod edges;
pub mod generate;
pub mod problem;

/// This primitive's entry in [`crate::suites::PRIMITIVE_SUITES`].
pub const SUITE: crate::suites::PrimitiveSuite = crate::suites::PrimitiveSuite {
    primitive: trident_core::Primitive::SparseCoder,
    cases: catalog::omp_cases,
    spec_cases: catalog::omp_spec_cases,
    conformance: conformance::sparse_coder,
    bad_input: conformance::bad_input_sparse_coder,
};
