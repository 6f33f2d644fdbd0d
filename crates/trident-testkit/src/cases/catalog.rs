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
/// SPEC-family cases at that size, then the edge cases. An unknown primitive
/// gives an empty list.
pub fn cases(primitive: &str, size: Size) -> Vec<Case> {
    match primitive {
        "dense_gemm" => gemm_cases(size),
        "sparse_gemm" => spgemm_cases(size),
        "nearest_pairs" => pairs_cases(size),
        "sparse_coder" => omp_cases(size),
        "max_flow" => flow_cases(size),
        _ => Vec::new(),
    }
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

/// SPEC's benchmark cases at full size, named as SPEC names them, for the
/// benches. Far too big for the reference in tests: `verify` runs the
/// [`Size::Large`] versions instead. `flow-rmf` is genrmf(a = 32, b = 64,
/// c1 = 1, c2 = 10000): 65,536 nodes, about 330K arcs.
pub fn spec_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for n in [4096usize, 8192] {
        add(&mut v, format!("gemm-{n}"), "dense_gemm", false, move |s| {
            Input::Gemm32(gemm(n, s))
        });
    }
    add(
        &mut v,
        "spgemm-poisson2d-2048".into(),
        "sparse_gemm",
        false,
        |_| Input::Spgemm32(SpgemmCase::square(poisson2d(2048))),
    );
    add(
        &mut v,
        "spgemm-rmat-16-8".into(),
        "sparse_gemm",
        false,
        |s| Input::Spgemm32(SpgemmCase::square(rmat(16, 8, s))),
    );
    add(
        &mut v,
        "spgemm-uniform-1M-8".into(),
        "sparse_gemm",
        false,
        |s| Input::Spgemm32(SpgemmCase::square(uniform_rows(1 << 20, 1 << 20, 8, s))),
    );
    add(
        &mut v,
        "pairs-1M-400K".into(),
        "nearest_pairs",
        false,
        |s| Input::Pairs(pairs_uniform(1_000_000, 400_000, s)),
    );
    add(
        &mut v,
        "pairs-clustered".into(),
        "nearest_pairs",
        false,
        |s| Input::Pairs(pairs_clustered(1_000_000, 400_000, s)),
    );
    add(
        &mut v,
        "omp-64x256-k16".into(),
        "sparse_coder",
        false,
        |s| Input::Omp32(omp_dct(1_000_000, s)),
    );
    for n in [512usize, 2048] {
        add(&mut v, format!("cut-{n}"), "max_flow", false, move |s| {
            Input::Grid(cut(n, s))
        });
    }
    add(&mut v, "flow-rmf".into(), "max_flow", false, |s| {
        Input::Network(genrmf(32, 64, 1, 10_000, s))
    });
    v
}

pub(crate) fn pick<T: Copy>(size: Size, small: T, large: T) -> T {
    match size {
        Size::Small => small,
        Size::Large => large,
    }
}

use crate::dense_gemm::catalog::gemm_cases;
use crate::max_flow::catalog::flow_cases;
use crate::nearest_pairs::catalog::pairs_cases;
use crate::sparse_coder::catalog::omp_cases;
use crate::sparse_gemm::catalog::spgemm_cases;
