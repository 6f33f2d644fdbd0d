//! DenseGemm in the test kit, in one folder: `generate` (input generators),
//! `catalog` (the named cases), `check` (the checker, under
//! `docs/tolerances.md`) and `conformance` (the suite every backend runs).
//! The reference's independent certificates are separate, in
//! `trident_reference::certify`.

pub(crate) mod catalog;
pub mod check;
pub mod conformance;
pub mod generate;
pub mod problem;

/// This primitive's entry in [`crate::suites::PRIMITIVE_SUITES`].
pub const SUITE: crate::suites::PrimitiveSuite = crate::suites::PrimitiveSuite {
    primitive: trident_core::Primitive::DenseGemm,
    cases: catalog::gemm_cases,
    spec_cases: catalog::gemm_spec_cases,
    conformance: conformance::dense_gemm,
    bad_input: conformance::bad_input_dense_gemm,
};
