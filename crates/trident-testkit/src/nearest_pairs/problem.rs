//! NearestPairs as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`PairsCase`] (`nearest`, `knn` and `closest_pairs` on the same
//! sets).
//!
//! Certificates are naive on purpose, so on large cases (where brute force
//! over |A| x |B| would take minutes) they check a fixed sample of
//! [`CERT_SAMPLE`] queries and skip the closest-pairs certificate; the
//! certificate's note says so.

use std::path::Path;

use trident_core::{
    Coord, NearestPairs, Neighbor, Pair, Primitive, Primitives, RadiusNeighbors, Result, Scalar,
};
use trident_reference::certify;

use super::check::{check_knn, check_nearest, check_pairs, check_within};
use super::generate::PairsCase;
use crate::cases::{Input, io};
use crate::check::Verdict;
use crate::problem::{Certified, Problem};

/// Queries certified on a large nearest-neighbour case.
pub const CERT_SAMPLE: usize = 2048;
/// Above this many point pairs (|A| x |B|) the nearest-neighbour certificates
/// sample [`CERT_SAMPLE`] queries instead of checking all of them.
pub const CERT_FULL_PAIRS: u128 = 1 << 31;

/// The answers of `nearest`, `knn`, `closest_pairs`, `within` and
/// `self_pairs` on one case.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsAnswer<T = f32> {
    /// Nearest neighbour of each point of A (empty when B is).
    pub nearest: Vec<Neighbor<T>>,
    /// `knn_k` nearest per point of A.
    pub knn: Vec<Neighbor<T>>,
    /// The `pairs_k` closest pairs.
    pub pairs: Vec<Pair<T>>,
    /// `within(A, B, radius)`.
    pub within: RadiusNeighbors<T>,
    /// `self_pairs(B, radius)`.
    pub self_pairs: RadiusNeighbors<T>,
}

/// Runs every call of a case on a backend, in `T`.
fn run_pairs<T: Coord>(b: &dyn NearestPairs<T>, c: &PairsCase<T>) -> Result<PairsAnswer<T>> {
    let mut nearest = vec![Neighbor::default(); if c.b.is_empty() { 0 } else { c.a.len() }];
    if !c.b.is_empty() {
        b.nearest(&c.a, &c.b, &mut nearest)?;
    }
    let mut knn = vec![Neighbor::default(); c.a.len() * c.knn_k];
    b.knn(&c.a, &c.b, c.knn_k, &mut knn)?;
    let pairs = b.closest_pairs(&c.a, &c.b, c.pairs_k)?;
    let within = b.within(&c.a, &c.b, c.radius, usize::MAX)?;
    let self_pairs = b.self_pairs(&c.b, c.radius, usize::MAX)?;
    Ok(PairsAnswer {
        nearest,
        knn,
        pairs,
        within,
        self_pairs,
    })
}

/// [`run_pairs`] across the ranks of a cluster: A cut evenly by rows, B
/// replicated for `knn`, `closest_pairs` and `within`, and cut too for
/// `nearest` (passed round the ring); `self_pairs` cut by rows of B.
#[cfg(feature = "dist")]
fn run_pairs_sharded<T: trident_dist::ShardCoord>(
    s: &trident_dist::Sharded<'_>,
    c: &PairsCase<T>,
) -> Result<PairsAnswer<T>> {
    use trident_dist::even_split;
    let (rank, size) = (s.cluster().rank(), s.cluster().size());
    let rows = even_split(c.a.len(), size, rank);
    let a = &c.a[rows.clone()];
    let mut nearest = vec![Neighbor::default(); if c.b.is_empty() { 0 } else { a.len() }];
    if !c.b.is_empty() {
        let b_part = &c.b[even_split(c.b.len(), size, rank)];
        s.nearest_ring(a, b_part, &mut nearest)?;
    }
    let mut knn = vec![Neighbor::default(); a.len() * c.knn_k];
    s.knn(a, &c.b, c.knn_k, &mut knn)?;
    let pairs = s.closest_pairs(a, &c.b, c.pairs_k)?;
    let within = s.within(a, &c.b, c.radius, usize::MAX)?;
    let (_, self_pairs) = s.self_pairs(&c.b, c.radius, usize::MAX)?;
    Ok(PairsAnswer {
        nearest: s.gather_neighbors(&nearest)?,
        knn: s.gather_neighbors(&knn)?,
        pairs,
        within: s.gather_radius(&within)?,
        self_pairs: s.gather_radius(&self_pairs)?,
    })
}

/// The queries a certificate checks: all of them on small cases, an evenly
/// spread sample of [`CERT_SAMPLE`] on large ones.
fn cert_rows(rows: usize, others: usize) -> (Vec<usize>, bool) {
    let full = rows as u128 * others as u128 <= CERT_FULL_PAIRS;
    if full {
        ((0..rows).collect(), true)
    } else {
        let step = rows.div_ceil(CERT_SAMPLE).max(1);
        ((0..rows).step_by(step).collect(), false)
    }
}

fn cert_pairs<T: Coord>(c: &PairsCase<T>, e: &PairsAnswer<T>) -> Certified {
    let work = c.a.len() as u128 * c.b.len() as u128;
    let (picks, full) = cert_rows(c.a.len(), c.b.len());
    let a: Vec<_> = picks.iter().map(|&i| c.a[i]).collect();
    let mut worst = 0.0f64;
    if !c.b.is_empty() {
        let near: Vec<_> = picks.iter().map(|&i| e.nearest[i]).collect();
        worst = worst.max(certify::nearest(&a, &c.b, &near).map_err(|e| format!("nearest: {e}"))?);
    }
    let k = c.knn_k;
    let kn: Vec<_> = picks
        .iter()
        .flat_map(|&i| e.knn[i * k..(i + 1) * k].iter().copied())
        .collect();
    worst = worst.max(certify::knn(&a, &c.b, k, &kn).map_err(|e| format!("knn: {e}"))?);
    worst = worst.max(
        certify::within(&c.a, &c.b, c.radius, false, &picks, &e.within)
            .map_err(|e| format!("within: {e}"))?,
    );
    let (self_picks, self_full) = cert_rows(c.b.len(), c.b.len());
    worst = worst.max(
        certify::within(&c.b, &c.b, c.radius, true, &self_picks, &e.self_pairs)
            .map_err(|e| format!("self_pairs: {e}"))?,
    );
    let mut notes = Vec::new();
    if full {
        let w = certify::closest_pairs(&c.a, &c.b, c.pairs_k, &e.pairs)
            .map_err(|e| format!("closest_pairs: {e}"))?;
        worst = worst.max(w);
    } else {
        notes.push(format!(
            "nearest/knn/within on {} of {} queries; closest_pairs not certified (|A| x |B| = {work})",
            picks.len(),
            c.a.len()
        ));
    }
    if !self_full {
        notes.push(format!(
            "self_pairs on {} of {} rows",
            self_picks.len(),
            c.b.len()
        ));
    }
    Ok((
        worst,
        (!notes.is_empty()).then(|| format!("certificates sampled: {}", notes.join("; "))),
    ))
}

macro_rules! pairs_problem {
    ($t:ty) => {
        impl Problem for PairsCase<$t> {
            type Expected = PairsAnswer<$t>;
            type Produced = PairsAnswer<$t>;
            fn primitive(&self) -> Primitive {
                Primitive::NearestPairs
            }
            fn describe(&self) -> String {
                format!(
                    "{} |A|={} |B|={} knn k={} pairs k={} r={}",
                    <$t as Scalar>::NAME,
                    self.a.len(),
                    self.b.len(),
                    self.knn_k,
                    self.pairs_k,
                    self.radius
                )
            }
            fn produce(&self, backend: &dyn Primitives) -> Result<PairsAnswer<$t>> {
                run_pairs::<$t>(backend, self)
            }
            fn expected(&self, reference: &dyn Primitives) -> Result<PairsAnswer<$t>> {
                run_pairs::<$t>(reference, self)
            }
            fn compare(&self, e: &PairsAnswer<$t>, got: &PairsAnswer<$t>) -> Verdict {
                compare(self, e, got)
            }
            fn certify(&self, expected: &PairsAnswer<$t>) -> Certified {
                cert_pairs(self, expected)
            }
            fn write(&self, path: &Path) -> Result<()> {
                io::write_points(path, self)
            }
            #[cfg(feature = "dist")]
            fn produce_sharded(
                &self,
                sharded: &trident_dist::Sharded<'_>,
            ) -> Option<Result<PairsAnswer<$t>>> {
                Some(run_pairs_sharded::<$t>(sharded, self))
            }
        }
    };
}
pairs_problem!(f32);
pairs_problem!(f64);

fn compare<T: Coord>(c: &PairsCase<T>, e: &PairsAnswer<T>, got: &PairsAnswer<T>) -> Verdict {
    let mut v = Verdict::default();
    if !c.b.is_empty() {
        v.merge(
            "nearest",
            check_nearest(&c.a, &c.b, &e.nearest, &got.nearest),
        );
    }
    v.merge("knn", check_knn(&c.a, &c.b, c.knn_k, &e.knn, &got.knn));
    v.merge(
        "closest_pairs",
        check_pairs(&c.a, &c.b, c.pairs_k, &e.nearest, &e.pairs, &got.pairs),
    );
    v.merge(
        "within",
        check_within(&c.a, &c.b, c.radius, false, &e.within, &got.within),
    );
    v.merge(
        "self_pairs",
        check_within(&c.b, &c.b, c.radius, true, &e.self_pairs, &got.self_pairs),
    );
    v
}

impl Input {
    /// This input with its type spelled out; named like the variant of the
    /// enum `Input` once was.
    #[allow(non_snake_case)]
    pub fn Pairs(c: PairsCase) -> Input {
        Input::new(c)
    }
}
