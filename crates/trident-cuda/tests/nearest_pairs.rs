//! NearestPairs on the GPU against brute force on small sets, in f32 and f64
//! coordinates: uniform, clustered, heavy ties (integer lattice), degenerate B
//! (one point, a plane), queries far outside B, knn with k below and above the
//! in-register limit, closest_pairs order, UTM-like f64 coordinates. The
//! search is exact and computes d2 with the same formula in the same type
//! (`trident_core::dist2`), so results are compared bit for bit. Radius
//! search (`within`, `self_pairs`) likewise against a brute force that decides
//! `dist2 <= r * r` in the coordinate type, and against the reference (whose
//! exact distances may decide pairs within rounding of the radius the other
//! way). Skipped without CUDA.

mod common;

use trident_core::{
    Coord, DeviceMemory, Error, NearestPairs, NearestPairsDevice, Neighbor, Pair, Point, dist2,
};
use trident_cuda::CudaBackend;
use trident_reference::ReferenceBackend;

use common::{Rng, backend, seed};

fn by_key<T: Coord>(x: &(T, u32), y: &(T, u32)) -> std::cmp::Ordering {
    x.0.to_f64().total_cmp(&y.0.to_f64()).then(x.1.cmp(&y.1))
}

fn brute_knn<T: Coord>(a: &[Point<T>], b: &[Point<T>], k: usize) -> Vec<Neighbor<T>> {
    let mut out = Vec::with_capacity(a.len() * k);
    for p in a {
        let mut all: Vec<(T, u32)> = b
            .iter()
            .enumerate()
            .map(|(j, q)| (dist2(p, q), j as u32))
            .collect();
        all.sort_by(by_key);
        out.extend(all[..k].iter().map(|&(d2, index)| Neighbor { index, d2 }));
    }
    out
}

fn brute_pairs<T: Coord>(a: &[Point<T>], b: &[Point<T>], k: usize) -> Vec<Pair<T>> {
    let nn = brute_knn(a, b, 1);
    let mut p: Vec<Pair<T>> = nn
        .iter()
        .enumerate()
        .map(|(i, n)| Pair {
            a: i as u32,
            b: n.index,
            d2: n.d2,
        })
        .collect();
    p.sort_by(|x, y| x.d2.to_f64().total_cmp(&y.d2.to_f64()).then(x.a.cmp(&y.a)));
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

fn check_all<T: Coord>(be: &CudaBackend, a: &[Point<T>], b: &[Point<T>], label: &str)
where
    CudaBackend: NearestPairs<T>,
{
    let poison = Neighbor {
        index: 77,
        d2: T::from_f64(-1.0),
    };
    let want = brute_knn(a, b, 1);
    let mut got = vec![poison; a.len()];
    NearestPairs::<T>::nearest(be, a, b, &mut got).unwrap_or_else(|e| panic!("{label}: {e}"));
    for i in 0..a.len() {
        assert_eq!(got[i], want[i], "{label}: nearest of a[{i}] = {:?}", a[i]);
    }
    for k in [1usize, 5, 33] {
        let k = k.min(b.len());
        let want = brute_knn(a, b, k);
        let mut got = vec![poison; a.len() * k];
        NearestPairs::<T>::knn(be, a, b, k, &mut got)
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
        let got = NearestPairs::<T>::closest_pairs(be, a, b, k)
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
    check_all(&be, &[[1.0f32, 2.0, 3.0]], &[[4.0, 6.0, 3.0]], "singletons");
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

/// `p` in f64 (exact).
fn wide(p: &[Point]) -> Vec<Point<f64>> {
    p.iter().map(|q| q.map(f64::from)).collect()
}

/// Points on a metre lattice around (5e5, 5.3e6, 200), as projected (UTM)
/// survey coordinates are, each moved by up to `jitter` per axis: `nx * ny *
/// nz` points in lattice order.
fn utm(rng: &mut Rng, nx: usize, ny: usize, nz: usize, jitter: f64) -> Vec<Point<f64>> {
    let mut p = Vec::with_capacity(nx * ny * nz);
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let c = [5e5 + x as f64, 5.3e6 + y as f64, 200.0 + z as f64];
                p.push(c.map(|v| v + jitter * rng.range(-1.0, 1.0)));
            }
        }
    }
    p
}

#[test]
fn f64_matches_brute_force() {
    let Some(be) = backend("f64_matches_brute_force") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs f64"));
    // Uniform real coordinates (not f32 values).
    let a: Vec<Point<f64>> = (0..1200)
        .map(|_| [0, 1, 2].map(|_| rng.range(-1e3, 1e3)))
        .collect();
    let b: Vec<Point<f64>> = (0..800)
        .map(|_| [0, 1, 2].map(|_| rng.range(-1e3, 1e3)))
        .collect();
    check_all(&be, &a, &b, "f64 uniform");
    // The f32 sets in f64: the same answers up to the type of d2.
    let centers = uniform(&mut rng, 8, 5e4, 9.5e5);
    let a = wide(&clustered(&mut rng, 1500, &centers, 1e4));
    let b = wide(&clustered(&mut rng, 900, &centers, 1e4));
    check_all(&be, &a, &b, "f64 clustered");
    let a = wide(&uniform(&mut rng, 700, 0.0, 6.0));
    let b = wide(&uniform(&mut rng, 400, 0.0, 6.0));
    check_all(&be, &a, &b, "f64 lattice ties");
    // Survey coordinates: metre spacing, millimetre jitter; neighbours differ
    // in digits f32 does not have at 5.3e6.
    let b = utm(&mut rng, 14, 12, 6, 0.01);
    let a = utm(&mut rng, 13, 12, 7, 0.45);
    check_all(&be, &a, &b, "f64 UTM");
    // Exact lattice, no jitter: ties everywhere, at large coordinates.
    let b = utm(&mut rng, 10, 10, 5, 0.0);
    let a: Vec<Point<f64>> = b.iter().map(|p| [p[0] + 0.5, p[1] + 0.5, p[2]]).collect();
    check_all(&be, &a, &b, "f64 UTM lattice ties");
    // Far queries and a single B point.
    let far: Vec<Point<f64>> = (0..50).map(|i| [1e12 + i as f64, -3e11, 7.0]).collect();
    check_all(&be, &far, &b, "f64 far queries");
    check_all(&be, &a, &[[5e5, 5.3e6, 200.0]], "f64 B one point");
    for t in [0.25f32, 64.0] {
        be.set_cell_target(t);
        check_all(&be, &a, &b, &format!("f64 UTM, cell target {t}"));
    }
    be.set_cell_target(trident_cuda::DEFAULT_CELL_TARGET);
}

/// The ends of f64's range: coordinates beyond 2^510 and below 2^-459 are
/// scaled by a power of two, so the neighbour is still exact.
#[test]
fn f64_range_ends_against_the_reference() {
    let Some(be) = backend("f64_range_ends") else {
        return;
    };
    let reference = ReferenceBackend::new().unwrap();
    let mut rng = Rng::new(seed("nearest_pairs f64 range"));
    for scale in [1e300, 1e-300, 1e150] {
        let a: Vec<Point<f64>> = (0..300)
            .map(|_| [0, 1, 2].map(|_| scale * rng.range(-1.0, 1.0)))
            .collect();
        let b: Vec<Point<f64>> = (0..200)
            .map(|_| [0, 1, 2].map(|_| scale * rng.range(-1.0, 1.0)))
            .collect();
        let mut got = vec![Neighbor::<f64>::default(); a.len()];
        let mut want = got.clone();
        NearestPairs::<f64>::nearest(&be, &a, &b, &mut got).unwrap();
        NearestPairs::<f64>::nearest(&reference, &a, &b, &mut want).unwrap();
        for i in 0..a.len() {
            // Random reals: no exact ties, and no rounding-level ones either.
            assert_eq!(got[i].index, want[i].index, "scale {scale:e}, query {i}");
            // inf (1e300) and 0 (1e-300) where the true d2 is beyond f64.
            let (g, w) = (got[i].d2, want[i].d2);
            assert!(
                g == w || (g - w).abs() <= 1e-12 * w,
                "scale {scale:e}, query {i}: d2 {g:e}, reference {w:e}"
            );
        }
        let got = NearestPairs::<f64>::closest_pairs(&be, &a, &b, 20).unwrap();
        let want = NearestPairs::<f64>::closest_pairs(&reference, &a, &b, 20).unwrap();
        let ab = |p: &[Pair<f64>]| p.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>();
        assert_eq!(ab(&got), ab(&want), "scale {scale:e}: closest pairs");
    }
}
