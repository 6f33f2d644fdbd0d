//! NearestPairs as a [`Problem`]: how the test kit runs, checks, certifies and
//! writes a [`PairsCase`] (`nearest`, `knn` and `closest_pairs` on the same
//! sets).
//!
//! Certificates are naive on purpose, so on large cases (where brute force
//! over |A| x |B| would take minutes) they check a fixed sample of
//! [`CERT_SAMPLE`] queries and skip the closest-pairs certificate; the
//! certificate's note says so.

use std::path::Path;

use trident_core::{Neighbor, Pair, Primitive, Primitives, Result};
use trident_reference::certify;

use super::check::{check_knn, check_nearest, check_pairs};
use super::generate::PairsCase;
use crate::cases::{Input, io};
use crate::check::Verdict;
use crate::problem::{Certified, Problem};

/// Queries certified on a large nearest-neighbour case.
pub const CERT_SAMPLE: usize = 2048;
/// Above this many point pairs (|A| x |B|) the nearest-neighbour certificates
/// sample [`CERT_SAMPLE`] queries instead of checking all of them.
pub const CERT_FULL_PAIRS: u128 = 1 << 31;

/// The answers of `nearest`, `knn` and `closest_pairs` on one case.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsAnswer {
    /// Nearest neighbour of each point of A (empty when B is).
    pub nearest: Vec<Neighbor>,
    /// `knn_k` nearest per point of A.
    pub knn: Vec<Neighbor>,
    /// The `pairs_k` closest pairs.
    pub pairs: Vec<Pair>,
}

fn run_pairs(b: &dyn Primitives, c: &PairsCase) -> Result<PairsAnswer> {
    let mut nearest = vec![Neighbor::default(); if c.b.is_empty() { 0 } else { c.a.len() }];
    if !c.b.is_empty() {
        b.nearest(&c.a, &c.b, &mut nearest)?;
    }
    let mut knn = vec![Neighbor::default(); c.a.len() * c.knn_k];
    b.knn(&c.a, &c.b, c.knn_k, &mut knn)?;
    let pairs = b.closest_pairs(&c.a, &c.b, c.pairs_k)?;
    Ok(PairsAnswer {
        nearest,
        knn,
        pairs,
    })
}

fn cert_pairs(c: &PairsCase, e: &PairsAnswer) -> Certified {
    let work = c.a.len() as u128 * c.b.len() as u128;
    let full = work <= CERT_FULL_PAIRS;
    // A fixed, evenly spread sample of queries on large cases.
    let picks: Vec<usize> = if full {
        (0..c.a.len()).collect()
    } else {
        let step = c.a.len().div_ceil(CERT_SAMPLE).max(1);
        (0..c.a.len()).step_by(step).collect()
    };
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
    if full {
        let w = certify::closest_pairs(&c.a, &c.b, c.pairs_k, &e.pairs)
            .map_err(|e| format!("closest_pairs: {e}"))?;
        Ok((worst.max(w), None))
    } else {
        Ok((
            worst,
            Some(format!(
                "certificates sampled: nearest/knn on {} of {} queries; closest_pairs not certified (|A| x |B| = {work})",
                picks.len(),
                c.a.len()
            )),
        ))
    }
}

impl Problem for PairsCase {
    type Expected = PairsAnswer;
    type Produced = PairsAnswer;
    fn primitive(&self) -> Primitive {
        Primitive::NearestPairs
    }
    fn describe(&self) -> String {
        format!(
            "|A|={} |B|={} knn k={} pairs k={}",
            self.a.len(),
            self.b.len(),
            self.knn_k,
            self.pairs_k
        )
    }
    fn produce(&self, backend: &dyn Primitives) -> Result<PairsAnswer> {
        run_pairs(backend, self)
    }
    fn expected(&self, reference: &dyn Primitives) -> Result<PairsAnswer> {
        run_pairs(reference, self)
    }
    fn compare(&self, e: &PairsAnswer, got: &PairsAnswer) -> Verdict {
        let mut v = Verdict::default();
        if !self.b.is_empty() {
            v.merge(
                "nearest",
                check_nearest(&self.a, &self.b, &e.nearest, &got.nearest),
            );
        }
        v.merge(
            "knn",
            check_knn(&self.a, &self.b, self.knn_k, &e.knn, &got.knn),
        );
        v.merge(
            "closest_pairs",
            check_pairs(
                &self.a,
                &self.b,
                self.pairs_k,
                &e.nearest,
                &e.pairs,
                &got.pairs,
            ),
        );
        v
    }
    fn certify(&self, expected: &PairsAnswer) -> Certified {
        cert_pairs(self, expected)
    }
    fn write(&self, path: &Path) -> Result<()> {
        io::write_points(path, self)
    }
}

impl Input {
    /// This input with its type spelled out; named like the variant of the
    /// enum `Input` once was.
    #[allow(non_snake_case)]
    pub fn Pairs(c: PairsCase) -> Input {
        Input::new(c)
    }
}
