//! Deterministic input generators for every benchmark case, small and
//! large versions of them, and named edge cases.
//!
//! Everything here is a pure function of its parameters and a `u64` seed
//! (ChaCha8 streams), so a failing case is reproduced by its name and seed
//! alone. The [`Case`] catalog ([`cases`], [`spec_cases`], [`find_case`]) is
//! what `verify`, the conformance suite and the benches iterate over; the
//! generator functions ([`gemm`], [`poisson2d`], [`rmat`], [`pairs_uniform`],
//! [`omp_dct`], [`cut`], [`genrmf`], ...) build one input directly. [`io`]
//! writes inputs to files that the Python peer scripts read.
//!
//! This module makes inputs only; what a correct answer is lives in the
//! reference backend and the checks in [`crate::check`].

pub(crate) mod catalog;
pub mod io;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use crate::problem::Input;
pub use catalog::{Case, all_cases, cases, find_case, spec_cases};
// The generators live in the primitives' folders; the registry gathers them
// and they are re-exported here under their old paths.
pub use crate::registry::generators::*;

/// Which version of the cases to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Size {
    /// Seconds in a debug build on two cores, on every backend including the
    /// reference: what CI runs (`verify --size small`) and the tests use.
    #[default]
    Small,
    /// Meaningful sizes (gemm 1024, poisson 512, rmat scale 14, pairs 200K x
    /// 80K, omp 20K signals, cut-512, rmf 20 x 20 x 20): minutes on the
    /// reference in release.
    Large,
}

impl std::str::FromStr for Size {
    type Err = trident_core::Error;
    fn from_str(s: &str) -> trident_core::Result<Self> {
        match s {
            "small" => Ok(Size::Small),
            "large" => Ok(Size::Large),
            other => Err(trident_core::Error::arg(
                "size",
                format!("unknown size {other:?}; expected \"small\" or \"large\""),
            )),
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Size::Small => "small",
            Size::Large => "large",
        })
    }
}

/// The random stream every generator draws from.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The seed a named case is generated from under a base seed: the case name is
/// hashed in, so each case's input depends only on `(seed, name)` and not on
/// which other cases run.
pub fn case_seed(seed: u64, name: &str) -> u64 {
    // FNV-1a, then a splitmix64 finaliser so nearby seeds give unrelated streams.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = seed ^ h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
