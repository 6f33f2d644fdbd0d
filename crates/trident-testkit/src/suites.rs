//! What one primitive gives the shared machinery (the catalog, the verify
//! runner, the conformance driver): its cases and suites, as a
//! [`PrimitiveSuite`]. The list of them, [`PRIMITIVE_SUITES`], is built in
//! [`crate::registry`] (the one module that names the primitive folders) and
//! re-exported here (see `ARCHITECTURE.md`, "Adding a primitive").

use trident_core::Primitive;

use crate::cases::{Case, Size};
use crate::conformance::Suite;

/// Everything the shared machinery needs from one primitive's folder; each
/// folder defines its own as `SUITE` (listed in [`PRIMITIVE_SUITES`]).
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

pub use crate::registry::{PRIMITIVE_SUITES, suite};
