//! The named cases `verify`, the conformance suite and the benches run.

use std::sync::Arc as Shared;

use trident_core::PRIMITIVES;

use super::*;

type Generator = dyn Fn(u64) -> Input + Send + Sync;

/// A named input: its name (as reports and `--case` spell it), the primitive
/// it exercises, and a generator. The input is made on demand by
/// [`Case::input`], so a list of large cases costs nothing until run.
#[derive(Clone)]
pub struct Case {
    /// E.g. `"spgemm-rmat-8-8"` or `"pairs-edge-duplicates"`.
    pub name: String,
    /// One of [`trident_core::PRIMITIVES`].
    pub primitive: &'static str,
    /// `true` for the hand-made edge cases (same at every size).
    pub edge: bool,
    generate: Shared<Generator>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("primitive", &self.primitive)
            .field("edge", &self.edge)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// A case from a generator taking the case's own seed.
    pub fn new(
        name: impl Into<String>,
        primitive: &'static str,
        edge: bool,
        generate: impl Fn(u64) -> Input + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            primitive,
            edge,
            generate: Shared::new(generate),
        }
    }

    /// The input under base seed `seed` (the generator gets
    /// [`case_seed`]`(seed, name)`): the same `(name, seed)` always gives the
    /// same bytes.
    pub fn input(&self, seed: u64) -> Input {
        (self.generate)(case_seed(seed, &self.name))
    }
}

pub(crate) fn add(
    v: &mut Vec<Case>,
    name: String,
    prim: &'static str,
    edge: bool,
    f: impl Fn(u64) -> Input + Send + Sync + 'static,
) {
    v.push(Case::new(name, prim, edge, f));
}

/// The cases of `primitive` (one of [`PRIMITIVES`]) at `size`: the random
/// benchmark-family cases at that size, then the edge cases. An unknown primitive
/// gives an empty list.
pub fn cases(primitive: &str, size: Size) -> Vec<Case> {
    crate::registry::suite(primitive).map_or_else(Vec::new, |s| (s.cases)(size))
}

/// Every case of every primitive at `size`, in [`PRIMITIVES`] order.
pub fn all_cases(size: Size) -> Vec<Case> {
    PRIMITIVES.iter().flat_map(|p| cases(p, size)).collect()
}

/// The case called `name` at either size or among [`spec_cases`].
pub fn find_case(name: &str) -> Option<Case> {
    all_cases(Size::Small)
        .into_iter()
        .chain(all_cases(Size::Large))
        .chain(spec_cases())
        .find(|c| c.name == name)
}

/// The benchmark cases at full size, named as the contract names them, for the
/// benches, in [`PRIMITIVES`] order. Far too big for the reference in tests:
/// `verify` runs the [`Size::Large`] versions instead.
pub fn spec_cases() -> Vec<Case> {
    crate::registry::PRIMITIVE_SUITES
        .iter()
        .flat_map(|s| (s.spec_cases)())
        .collect()
}

pub(crate) fn pick<T: Copy>(size: Size, small: T, large: T) -> T {
    match size {
        Size::Small => small,
        Size::Large => large,
    }
}
