//! The registry of primitives: the one list the shared machinery (the
//! catalog, the verify runner, the conformance driver) reads to find a
//! primitive's cases and suites. Adding a primitive adds one line here (see
//! `ARCHITECTURE.md`, "Adding a primitive").

use trident_core::Primitive;

use crate::cases::{Case, Size};
use crate::conformance::Suite;

/// Everything the shared machinery needs from one primitive's folder; each
/// folder defines its own as `SUITE` (e.g. [`crate::dense_gemm::SUITE`]).
/// What runs, checks and certifies one input is the input's
/// [`crate::problem::Problem`] implementation, in the same folder.
#[derive(Clone, Copy, Debug)]
pub struct PrimitiveSuite {
    /// The primitive.
    pub primitive: Primitive,
    /// Its catalog cases at a size: the random contract-family cases, then the
    /// edge cases.
    pub cases: fn(Size) -> Vec<Case>,
    /// The contract's benchmark cases at full size (for the benches).
    pub spec_cases: fn() -> Vec<Case>,
    /// Its conformance suite.
    pub conformance: Suite,
    /// Its bad-input group.
    pub bad_input: Suite,
}

/// Every primitive's suite, in [`trident_core::PRIMITIVES`] order.
pub const PRIMITIVE_SUITES: [PrimitiveSuite; 5] = [
    crate::dense_gemm::SUITE,
    crate::sparse_gemm::SUITE,
    crate::nearest_pairs::SUITE,
    crate::sparse_coder::SUITE,
    crate::max_flow::SUITE,
];

/// The suite of the primitive called `name` (one of
/// [`trident_core::PRIMITIVES`]), if any.
pub fn suite(name: &str) -> Option<&'static PrimitiveSuite> {
    PRIMITIVE_SUITES.iter().find(|s| s.primitive.name() == name)
}
