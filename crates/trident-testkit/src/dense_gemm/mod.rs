//! DenseGemm in the test kit, in one folder: `generate` (input generators),
//! `catalog` (the named cases), `check` (the checker, under
//! `docs/tolerances.md`) and `conformance` (the suite every backend runs).
//! The reference's independent certificates are separate, in
//! `trident_reference::certify`.

pub(crate) mod catalog;
pub mod check;
pub mod conformance;
pub mod generate;
