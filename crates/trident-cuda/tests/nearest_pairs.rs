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
    Coord, DeviceMemory, Error, NearestIndexDevice, NearestPairs, NearestPairsDevice, Neighbor,
    Pair, Point, RadiusNeighbors, dist2, scale_coord, scaled_for_range, unscale_d2,
};
use trident_cuda::{CudaBackend, Tuning};
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

/// The contract's radius search by brute force: `dist2 <= r * r` in `T`
/// (on the points scaled as every backend scales them), rows sorted by
/// `(d2, j)`, only `j > i` when `b` is None (self pairs of `a`).
fn brute_within<T: Coord>(a: &[Point<T>], b: Option<&[Point<T>]>, r: T) -> RadiusNeighbors<T> {
    let (sa, sb, shift) = scaled_for_range(a, b.unwrap_or(&[]));
    let sb: &[Point<T>] = if b.is_some() { &sb } else { &sa };
    let r = scale_coord(r, shift);
    let r2 = r * r;
    let mut out = RadiusNeighbors {
        offsets: vec![0],
        indices: Vec::new(),
        d2: Vec::new(),
    };
    for (i, p) in sa.iter().enumerate() {
        let mut row: Vec<(T, u32)> = sb
            .iter()
            .enumerate()
            .filter(|&(j, _)| b.is_some() || j > i)
            .map(|(j, q)| (dist2(p, q), j as u32))
            .filter(|&(d, _)| d <= r2)
            .collect();
        row.sort_by(by_key);
        for (d, j) in row {
            out.indices.push(j);
            out.d2.push(unscale_d2(d, shift));
        }
        out.offsets.push(out.indices.len());
    }
    out
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
        let be = be.tuned(Tuning {
            cell_target: Some(t),
            ..Tuning::default()
        });
        check_all(&be, &a, &b, &format!("clustered, cell target {t}"));
    }
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

#[test]
fn a_kept_index_answers_like_the_plain_calls() {
    let Some(be) = backend("a_kept_index_answers_like_the_plain_calls") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs index"));
    let centers = uniform(&mut rng, 6, 0.0, 1e3);
    let hb = clustered(&mut rng, 5000, &centers, 4.0);
    let db = be.upload(&hb).unwrap();
    let index = be.index_points(&db).unwrap();
    assert_eq!(be.index_len(&index), hb.len());
    drop(db); // the index keeps its own copy of B
    // Several query sets against the one index: uniform, clustered, empty.
    for (label, ha) in [
        ("uniform", uniform(&mut rng, 3000, -50.0, 1050.0)),
        ("clustered", clustered(&mut rng, 2000, &centers, 6.0)),
        ("empty", Vec::new()),
    ] {
        let da = be.upload(&ha).unwrap();
        let mut dout = be.alloc_zeroed::<Neighbor>(ha.len()).unwrap();
        be.nearest_indexed(&da, &index, &mut dout).unwrap();
        let mut got = vec![Neighbor::default(); ha.len()];
        be.download(&dout, &mut got).unwrap();
        assert_eq!(got, brute_knn(&ha, &hb, 1), "{label}: nearest");
        for k in [1, 37, ha.len() + 5] {
            assert_eq!(
                be.closest_pairs_indexed(&da, &index, k).unwrap(),
                brute_pairs(&ha, &hb, k),
                "{label}: closest_pairs({k})"
            );
        }
    }
    // Bad input is named.
    let empty = be.upload::<Point>(&[]).unwrap();
    assert!(matches!(
        be.index_points(&empty),
        Err(Error::InvalidArgument { field: "b", .. })
    ));
    let da = be.upload(&hb[..10]).unwrap();
    let mut wrong = be.alloc_zeroed::<Neighbor>(3).unwrap();
    assert!(matches!(
        be.nearest_indexed(&da, &index, &mut wrong),
        Err(Error::DimensionMismatch { field: "out", .. })
    ));
}

/// The shared kept-index suite, as the wgpu backend runs it. Its clustered
/// B with queries spread over the whole box is the case that made the grid
/// walk millions of empty cells per query before the cells-per-point floor.
#[test]
fn the_shared_kept_index_suite() {
    let Some(be) = backend("the_shared_kept_index_suite") else {
        return;
    };
    trident_testkit::nearest_pairs::device::kept_index_matches_plain_calls(
        &be,
        seed("nearest_pairs index suite"),
    );
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
        let be = be.tuned(Tuning {
            cell_target: Some(t),
            ..Tuning::default()
        });
        check_all(&be, &a, &b, &format!("f64 UTM, cell target {t}"));
    }
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

/// `got` equals the contract's brute force bit for bit, and agrees with the
/// reference: the same pairs except those within rounding of the radius, and
/// distances within rounding.
fn check_radius<T: Coord>(
    be: &CudaBackend,
    a: &[Point<T>],
    b: Option<&[Point<T>]>,
    r: T,
    label: &str,
) -> RadiusNeighbors<T>
where
    CudaBackend: NearestPairs<T>,
    ReferenceBackend: NearestPairs<T>,
{
    let got = match b {
        Some(b) => NearestPairs::<T>::within(be, a, b, r, usize::MAX),
        None => NearestPairs::<T>::self_pairs(be, a, r, usize::MAX),
    }
    .unwrap_or_else(|e| panic!("{label}: {e}"));
    let want = brute_within(a, b, r);
    assert_eq!(got.offsets, want.offsets, "{label}: row lengths");
    for i in 0..got.rows() {
        assert_eq!(got.row(i), want.row(i), "{label}: row {i}");
    }
    // Twice: the same bits.
    let again = match b {
        Some(b) => NearestPairs::<T>::within(be, a, b, r, usize::MAX),
        None => NearestPairs::<T>::self_pairs(be, a, r, usize::MAX),
    }
    .unwrap();
    assert_eq!(again, got, "{label}: a second run");
    let reference = ReferenceBackend::new().unwrap();
    let exp = match b {
        Some(b) => NearestPairs::<T>::within(&reference, a, b, r, usize::MAX),
        None => NearestPairs::<T>::self_pairs(&reference, a, r, usize::MAX),
    }
    .unwrap();
    // f32: d2 computed in f32 is within ~5 units of 2^-24 of the exact value.
    let tol = if T::NAME == "f32" { 1e-6 } else { 1e-13 };
    // Below the normal range each rounds to a multiple of the least subnormal.
    let abs = 2.0 * T::MIN_SUBNORMAL.to_f64();
    let r2 = r.to_f64() * r.to_f64();
    let bset = b.unwrap_or(a);
    for i in 0..got.rows() {
        let mut g: Vec<(u32, f64)> = got
            .row(i)
            .0
            .iter()
            .zip(got.row(i).1)
            .map(|(&j, d)| (j, d.to_f64()))
            .collect();
        let mut w: Vec<(u32, f64)> = exp
            .row(i)
            .0
            .iter()
            .zip(exp.row(i).1)
            .map(|(&j, d)| (j, d.to_f64()))
            .collect();
        g.sort_by_key(|x| x.0);
        w.sort_by_key(|x| x.0);
        let (mut x, mut y) = (0, 0);
        while x < g.len() || y < w.len() {
            let gj = g.get(x).map_or(u32::MAX, |e| e.0);
            let wj = w.get(y).map_or(u32::MAX, |e| e.0);
            if gj == wj {
                let (gd, wd) = (g[x].1, w[y].1);
                // Equal covers inf: a d2 beyond T's range is reported as inf.
                assert!(
                    gd == wd || (gd - wd).abs() <= tol * wd + abs,
                    "{label}: row {i}, j = {gj}: d2 {gd:e}, reference {wd:e}"
                );
                x += 1;
                y += 1;
            } else {
                // In one answer only: must be within rounding of the radius.
                let j = gj.min(wj);
                let exact = T::exact_d2(&a[i], &bset[j as usize]);
                assert!(
                    (exact - r2).abs() <= 4.0 * tol * r2,
                    "{label}: row {i}, j = {j} (exact d2 {exact:e}, r^2 {r2:e}) is in {} only",
                    if gj < wj { "ours" } else { "the reference's" }
                );
                if gj < wj {
                    x += 1;
                } else {
                    y += 1;
                }
            }
        }
    }
    got
}

/// Both radius calls of one set: `within(p, p)` and `self_pairs(p)`.
fn check_radius_both<T: Coord>(be: &CudaBackend, p: &[Point<T>], q: &[Point<T>], r: T, label: &str)
where
    CudaBackend: NearestPairs<T>,
    ReferenceBackend: NearestPairs<T>,
{
    check_radius(be, p, Some(q), r, &format!("{label}: within"));
    check_radius(be, p, None, r, &format!("{label}: self_pairs"));
}

fn real_uniform<T: Coord>(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<Point<T>> {
    (0..n)
        .map(|_| [0, 1, 2].map(|_| T::from_f64(rng.range(lo, hi))))
        .collect()
}

fn radius_cases<T: Coord>(be: &CudaBackend, rng: &mut Rng)
where
    CudaBackend: NearestPairs<T>,
    ReferenceBackend: NearestPairs<T>,
{
    let t = T::NAME;
    let f = T::from_f64;
    // Random reals: about 4 neighbours per point at r = 60 in a 1e3 cube of 2000.
    let a = real_uniform::<T>(rng, 2000, 0.0, 1e3);
    let b = real_uniform::<T>(rng, 1500, 0.0, 1e3);
    for r in [0.0, 30.0, 60.0, 150.0] {
        check_radius_both(be, &a, &b, f(r), &format!("{t} uniform r = {r}"));
    }
    // Clustered: rows from empty to hundreds of pairs (tile sorts in place).
    let centers: Vec<Point<T>> = real_uniform(rng, 6, 0.0, 1e3);
    let cl: Vec<Point<T>> = (0..2500)
        .map(|i| {
            let c = centers[i % centers.len()];
            let s = if i % 3 == 0 { 5.0 } else { 40.0 };
            c.map(|v| f(v.to_f64() + s * rng.normal()))
        })
        .collect();
    for r in [1.0, 8.0, 25.0] {
        check_radius_both(be, &cl, &b, f(r), &format!("{t} clustered r = {r}"));
    }
    // Integer lattice in a small cube: d2 ties everywhere, pairs exactly at
    // the radius (r = 2: d2 = 4), duplicates.
    let lat: Vec<Point<T>> = (0..1500)
        .map(|_| [0, 1, 2].map(|_| f(rng.below(9) as f64)))
        .collect();
    for r in [0.0, 1.0, 2.0, 3.0] {
        check_radius_both(be, &lat, &lat[..700], f(r), &format!("{t} lattice r = {r}"));
    }
    // Duplicate-heavy: 4500 copies of one point plus a few others; rows of
    // 4500 pairs take two merge passes and the copy back, rows of ~2500 one.
    let mut dup: Vec<Point<T>> = vec![[f(3.0), f(-2.0), f(5.0)]; 4500];
    dup.extend(real_uniform::<T>(rng, 300, -10.0, 10.0));
    let queries: Vec<Point<T>> = dup.iter().step_by(40).copied().collect();
    for r in [0.0, 0.5, 4.0] {
        check_radius(
            be,
            &queries,
            Some(&dup),
            f(r),
            &format!("{t} duplicates r = {r}"),
        );
    }
    let mut dup2: Vec<Point<T>> = vec![[f(1.0), f(1.0), f(1.0)]; 2600];
    dup2.extend(real_uniform::<T>(rng, 400, 0.0, 3.0));
    check_radius(
        be,
        &dup2,
        None,
        f(0.25),
        &format!("{t} duplicates self_pairs"),
    );
    // A radius far beyond the data: every pair (cells counted whole), and
    // one whose square overflows T (every pair by the rule d2 <= inf).
    let small = real_uniform::<T>(rng, 300, -1.0, 1.0);
    let small_b = real_uniform::<T>(rng, 200, -1.0, 1.0);
    let huge = if t == "f32" { 1e30 } else { 1e200 };
    for r in [10.0, 1e6, huge] {
        let got = check_radius(be, &small, Some(&small_b), f(r), &format!("{t} r = {r:e}"));
        assert_eq!(got.len(), 300 * 200);
        let got = check_radius(be, &small, None, f(r), &format!("{t} self r = {r:e}"));
        assert_eq!(got.len(), 300 * 299 / 2);
    }
    // The cell size does not change the answer.
    for target in [0.25f32, 64.0] {
        let tuned = be.tuned(Tuning {
            cell_target: Some(target),
            ..Tuning::default()
        });
        let be = &tuned;
        check_radius_both(
            be,
            &cl,
            &b,
            f(8.0),
            &format!("{t} clustered, cell target {target}"),
        );
    }
}

#[test]
fn radius_matches_brute_force_and_reference() {
    let Some(be) = backend("radius_matches_brute_force") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs radius"));
    radius_cases::<f32>(&be, &mut rng);
    radius_cases::<f64>(&be, &mut rng);
}

#[test]
fn radius_utm_f64() {
    let Some(be) = backend("radius_utm_f64") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs radius utm"));
    let p = utm(&mut rng, 30, 25, 8, 0.02);
    let q = utm(&mut rng, 20, 20, 6, 0.4);
    for r in [0.5, 1.0, 1.5, 3.0] {
        check_radius_both(&be, &q, &p, r, &format!("UTM r = {r}"));
    }
    // Without jitter every distance is an integer: pairs exactly at r = 1, 2.
    let lattice = utm(&mut rng, 12, 12, 4, 0.0);
    for r in [1.0, 2.0f64.sqrt(), 2.0] {
        check_radius_both(&be, &lattice, &lattice, r, &format!("UTM lattice r = {r}"));
    }
}

/// Coordinates whose squared distances leave the type's range are scaled by
/// a power of two, the radius with them, and d2 scaled back.
#[test]
fn radius_at_the_ends_of_the_range() {
    let Some(be) = backend("radius_range_ends") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs radius range"));
    for scale in [1e25, 1e-20] {
        let a = real_uniform::<f32>(&mut rng, 400, 0.0, 100.0);
        let a: Vec<Point> = a.iter().map(|p| p.map(|v| v * scale as f32)).collect();
        let b: Vec<Point> = a
            .iter()
            .rev()
            .step_by(2)
            .map(|p| p.map(|v| v * 1.01))
            .collect();
        check_radius_both(
            &be,
            &a,
            &b,
            12.0 * scale as f32,
            &format!("f32 scale {scale:e}"),
        );
    }
    for scale in [1e300, 1e-300] {
        let a = real_uniform::<f64>(&mut rng, 400, 0.0, 100.0);
        let a: Vec<Point<f64>> = a.iter().map(|p| p.map(|v| v * scale)).collect();
        let b: Vec<Point<f64>> = a
            .iter()
            .rev()
            .step_by(2)
            .map(|p| p.map(|v| v * 1.01))
            .collect();
        check_radius_both(&be, &a, &b, 12.0 * scale, &format!("f64 scale {scale:e}"));
    }
}

#[test]
fn radius_limits_and_errors() {
    let Some(be) = backend("radius_limits_and_errors") else {
        return;
    };
    let mut rng = Rng::new(seed("nearest_pairs radius limits"));
    let a = real_uniform::<f32>(&mut rng, 500, 0.0, 10.0);
    let b = real_uniform::<f32>(&mut rng, 400, 0.0, 10.0);
    let all = be.within(&a, &b, 3.0, usize::MAX).unwrap();
    let n = all.len();
    assert!(n > 1000);
    // Exactly the count passes; one less is TooLarge, reporting the count.
    assert_eq!(be.within(&a, &b, 3.0, n).unwrap(), all);
    match be.within(&a, &b, 3.0, n - 1) {
        Err(Error::TooLarge {
            field: "pairs within r",
            value,
            limit,
        }) => {
            assert_eq!((value, limit), (n as u128, (n - 1) as u128));
        }
        other => panic!("max_pairs = {}: {other:?}", n - 1),
    }
    let pairs = be.self_pairs(&a, 3.0, usize::MAX).unwrap().len();
    assert!(matches!(
        be.self_pairs(&a, 3.0, pairs - 1),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        be.self_pairs(&a, 1e30, 1000),
        Err(Error::TooLarge { .. })
    ));
    let a64 = wide(&a);
    assert!(matches!(
        NearestPairs::<f64>::within(&be, &a64, &a64, 1e200, 10),
        Err(Error::TooLarge { .. })
    ));
    // Bad radii and points.
    for r in [-1.0f32, f32::NAN, f32::INFINITY] {
        assert!(
            matches!(
                be.within(&a, &b, r, usize::MAX),
                Err(Error::InvalidArgument { field: "r", .. })
            ),
            "r = {r}"
        );
        assert!(matches!(
            be.self_pairs(&a, r, usize::MAX),
            Err(Error::InvalidArgument { field: "r", .. })
        ));
    }
    let bad = vec![[0.0f32, f32::NAN, 0.0]];
    assert!(be.within(&a, &bad, 1.0, usize::MAX).is_err());
    assert!(be.self_pairs(&bad, 1.0, usize::MAX).is_err());
    // Empty sets: one empty row per point of A.
    let none = be.within(&a, &[], 5.0, 0).unwrap();
    assert_eq!((none.rows(), none.len()), (a.len(), 0));
    assert_eq!(none.offsets, vec![0; a.len() + 1]);
    let none = be.within(&[], &b, 5.0, 0).unwrap();
    assert_eq!(none.offsets, vec![0]);
    assert_eq!(be.self_pairs(&a[..1], 5.0, 0).unwrap().offsets, vec![0, 0]);
    let empty: &[Point] = &[];
    assert_eq!(be.self_pairs(empty, 5.0, 0).unwrap().offsets, vec![0]);
    let none64 = NearestPairs::<f64>::self_pairs(&be, &[], 5.0, 0).unwrap();
    assert_eq!(none64.offsets, vec![0]);
}
