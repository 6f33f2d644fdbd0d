//! NearestPairs on the GPU against brute force on small sets: uniform,
//! clustered, heavy ties (integer lattice), degenerate B (one point, a plane),
//! queries far outside B, knn with k below and above the in-register limit,
//! closest_pairs order. The search is exact and computes d2 with the same f32
//! formula, so results are compared bit for bit. Skipped without CUDA.

mod common;

use trident_core::{
    DeviceMemory, Error, NearestPairs, NearestPairsDevice, Neighbor, Pair, Point, dist2,
};
use trident_cuda::CudaBackend;

use common::{Rng, backend, seed};

fn brute_knn(a: &[Point], b: &[Point], k: usize) -> Vec<Neighbor> {
    let mut out = Vec::with_capacity(a.len() * k);
    for p in a {
        let mut all: Vec<(f32, u32)> = b
            .iter()
            .enumerate()
            .map(|(j, q)| (dist2(p, q), j as u32))
            .collect();
        all.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        out.extend(all[..k].iter().map(|&(d2, index)| Neighbor { index, d2 }));
    }
    out
}

fn brute_pairs(a: &[Point], b: &[Point], k: usize) -> Vec<Pair> {
    let nn = brute_knn(a, b, 1);
    let mut p: Vec<Pair> = nn
        .iter()
        .enumerate()
        .map(|(i, n)| Pair {
            a: i as u32,
            b: n.index,
            d2: n.d2,
        })
        .collect();
    p.sort_by(|x, y| x.d2.total_cmp(&y.d2).then(x.a.cmp(&y.a)));
    p.truncate(k);
    p
}

fn uniform(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<Point> {
    (0..n)
        .map(|_| [0, 1, 2].map(|_| rng.range(lo, hi).floor() as f32))
        .collect()
}

fn clustered(rng: &mut Rng, n: usize, centers: &[Point], sigma: f64) -> Vec<Point> {
    (0..n)
        .map(|_| {
            let c = centers[rng.below(centers.len() as u64) as usize];
            [0, 1, 2].map(|d| {
                (c[d] as f64 + sigma * rng.normal())
                    .round()
                    .clamp(0.0, 999_999.0) as f32
            })
        })
        .collect()
}

fn check_all(be: &CudaBackend, a: &[Point], b: &[Point], label: &str) {
    let want = brute_knn(a, b, 1);
    let mut got = vec![
        Neighbor {
            index: 77,
            d2: -1.0
        };
        a.len()
    ];
    be.nearest(a, b, &mut got)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    for i in 0..a.len() {
        assert_eq!(got[i], want[i], "{label}: nearest of a[{i}] = {:?}", a[i]);
    }
    for k in [1usize, 5, 33] {
        let k = k.min(b.len());
        let want = brute_knn(a, b, k);
        let mut got = vec![
            Neighbor {
                index: 77,
                d2: -1.0
            };
            a.len() * k
        ];
        be.knn(a, b, k, &mut got)
            .unwrap_or_else(|e| panic!("{label}: knn {k}: {e}"));
        for i in 0..a.len() * k {
            assert_eq!(
                got[i],
                want[i],
                "{label}: knn k={k}, query {} rank {}",
                i / k,
                i % k
            );
        }
    }
    for k in [1usize, 10, a.len() + 3] {
        let want = brute_pairs(a, b, k);
        let got = be
            .closest_pairs(a, b, k)
            .unwrap_or_else(|e| panic!("{label}: pairs: {e}"));
        assert_eq!(got, want, "{label}: closest_pairs k={k}");
    }
}

#[test]
fn uniform_and_clustered_match_brute_force() {
    let Some(be) = backend("uniform_and_clustered") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs"));
    let a = uniform(&mut rng, 1500, 0.0, 1e6);
    let b = uniform(&mut rng, 900, 0.0, 1e6);
    check_all(&be, &a, &b, "uniform");
    let centers = uniform(&mut rng, 8, 5e4, 9.5e5);
    let a = clustered(&mut rng, 1500, &centers, 1e4);
    let b = clustered(&mut rng, 900, &centers, 1e4);
    check_all(&be, &a, &b, "clustered");
    // Cell sizing must not change results.
    for t in [0.25f32, 2.0, 64.0] {
        be.set_cell_target(t);
        check_all(&be, &a, &b, &format!("clustered, cell target {t}"));
    }
    be.set_cell_target(trident_cuda::DEFAULT_CELL_TARGET);
}

#[test]
fn ties_degenerate_sets_and_far_queries() {
    let Some(be) = backend("ties_degenerate") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs ties"));
    // Integer lattice in a tiny cube: many exact ties, duplicates in B.
    let a = uniform(&mut rng, 700, 0.0, 6.0);
    let b = uniform(&mut rng, 400, 0.0, 6.0);
    check_all(&be, &a, &b, "lattice ties");
    // All of B one point.
    let b1 = vec![[3.0f32, -2.0, 5.0]; 40];
    check_all(&be, &a, &b1, "B one point");
    // B on a plane, A around it.
    let bp: Vec<Point> = (0..300)
        .map(|_| {
            [
                rng.range(0.0, 100.0) as f32,
                rng.range(0.0, 100.0) as f32,
                7.0,
            ]
        })
        .collect();
    let ap = uniform(&mut rng, 300, -20.0, 120.0);
    check_all(&be, &ap, &bp, "B planar");
    // Queries far outside B's box, and negative coordinates.
    let bf = uniform(&mut rng, 500, -50.0, 50.0);
    let af: Vec<Point> = (0..200)
        .map(|i| [1e5 + i as f32, -3e5, 2e4 * (i % 7) as f32])
        .collect();
    check_all(&be, &af, &bf, "far queries");
    // Single point B, single point A.
    check_all(&be, &[[1.0, 2.0, 3.0]], &[[4.0, 6.0, 3.0]], "singletons");
}

#[test]
fn errors_and_device_api() {
    let Some(be) = backend("errors_and_device_api") else {
        return;
    };
    let a = vec![[0.0f32, 0.0, 0.0]; 3];
    let mut out = vec![Neighbor::default(); 3];
    assert!(matches!(
        be.nearest(&a, &[], &mut out),
        Err(Error::InvalidArgument { field: "b", .. })
    ));
    assert!(matches!(
        be.knn(&a, &a, 4, &mut out),
        Err(Error::InvalidArgument { field: "k", .. })
    ));
    let bad = vec![[0.0f32, f32::INFINITY, 0.0]];
    assert!(be.closest_pairs(&a, &bad, 1).is_err());
    assert!(be.closest_pairs(&[], &a, 5).unwrap().is_empty());
    // Device-resident calls match the host ones.
    let mut rng = Rng::new(seed("nearest_pairs device"));
    let ha = uniform(&mut rng, 1000, 0.0, 1e4);
    let hb = uniform(&mut rng, 700, 0.0, 1e4);
    let (da, db) = (be.upload(&ha).unwrap(), be.upload(&hb).unwrap());
    let mut dout = be.alloc_zeroed::<Neighbor>(ha.len()).unwrap();
    be.nearest_device(&da, &db, &mut dout).unwrap();
    let mut got = vec![Neighbor::default(); ha.len()];
    be.download(&dout, &mut got).unwrap();
    assert_eq!(got, brute_knn(&ha, &hb, 1));
    assert_eq!(
        be.closest_pairs_device(&da, &db, 25).unwrap(),
        brute_pairs(&ha, &hb, 25)
    );
    let mut wrong = be.alloc_zeroed::<Neighbor>(3).unwrap();
    assert!(matches!(
        be.nearest_device(&da, &db, &mut wrong),
        Err(Error::DimensionMismatch { .. })
    ));
}
