//! Radius search (`within`, `self_pairs`) on wgpu against the reference
//! backend, on small inputs that reach every path of the shaders: random and
//! clustered points, duplicates, lattice ties, `r = 0`, a radius past the
//! whole set, empty sets, rows long enough for the workgroup sort's steps in
//! device memory (past 1024 pairs), rows past llvmpipe's loop cap (finished
//! on the host), coordinates that need range scaling, `max_pairs`, bad input
//! and f64.
//!
//! The reference decides `d2 <= r * r` on exact distances, wgpu in f32: on
//! integer (or power-of-two scaled integer) coordinates both are exact and
//! the answers must be equal; elsewhere a pair may differ only where its
//! exact distance is within rounding of `r`.
//! An unavailable backend is reported as SKIPPED unless named in
//! TRIDENT_REQUIRE_BACKENDS.
#![allow(missing_docs)]

use trident_core::{Error, NearestPairs, Point, RadiusNeighbors, dist2, dist2_f64};
use trident_reference::ReferenceBackend;
use trident_wgpu::WgpuBackend;

fn backend() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => Some(b),
        Err(Error::BackendUnavailable(reason)) => {
            let required = std::env::var("TRIDENT_REQUIRE_BACKENDS")
                .is_ok_and(|v| v.split(',').any(|n| matches!(n.trim(), "wgpu" | "all")));
            assert!(
                !required,
                "backend wgpu is required but unavailable: {reason}"
            );
            eprintln!("SKIPPED: backend wgpu unavailable: {reason}");
            None
        }
        Err(e) => panic!("constructing the wgpu backend failed: {e}"),
    }
}

fn lcg(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` points with coordinates `f(uniform in [0, 1))`.
fn pts(n: usize, seed: u64, f: impl Fn(f64) -> f32) -> Vec<Point> {
    let mut r = lcg(seed);
    (0..n).map(|_| [f(r()), f(r()), f(r())]).collect()
}

/// Offsets start at 0, end at the pair count, never decrease; each row is
/// increasing in `(d2, j)` and, for `self_pairs`, holds only `j > i`. (Rows
/// are sorted by the distance computed; reported as `inf` or 0 after range
/// scaling, distinct distances tie and keep that order, as the reference's.)
fn check_shape(name: &str, got: &RadiusNeighbors, rows: usize, upper: bool) {
    assert_eq!(got.offsets.len(), rows + 1, "{name}: offsets");
    assert_eq!(got.offsets[0], 0, "{name}: first offset");
    assert_eq!(got.offsets[rows], got.indices.len(), "{name}: last offset");
    assert_eq!(got.indices.len(), got.d2.len(), "{name}: d2 beside indices");
    for i in 0..rows {
        assert!(got.offsets[i] <= got.offsets[i + 1], "{name}: offsets");
        let (idx, d2) = got.row(i);
        for t in 1..idx.len() {
            let collapsed = d2[t] == d2[t - 1] && (d2[t] == 0.0 || d2[t].is_infinite());
            assert!(
                d2[t - 1] <= d2[t] && (idx[t - 1] < idx[t] || d2[t - 1] < d2[t] || collapsed),
                "{name}: row {i} unsorted at {t}: {:?} then {:?}",
                (d2[t - 1], idx[t - 1]),
                (d2[t], idx[t])
            );
        }
        if upper {
            assert!(idx.iter().all(|&j| j as usize > i), "{name}: row {i}");
        }
    }
}

/// Equal to the reference, bit for bit (exact distances).
fn exact(name: &str, got: &RadiusNeighbors, want: &RadiusNeighbors) {
    assert_eq!(got.offsets, want.offsets, "{name}: offsets");
    assert_eq!(got.indices, want.indices, "{name}: indices");
    let (g, w): (Vec<u32>, Vec<u32>) = (
        got.d2.iter().map(|d| d.to_bits()).collect(),
        want.d2.iter().map(|d| d.to_bits()).collect(),
    );
    assert_eq!(g, w, "{name}: d2");
}

/// The reference's rows up to pairs at rounding distance from `r`: each
/// reported pair has its f32 distance and lies within `r` (up to rounding),
/// and every pair one side has and the other lacks is at the boundary.
fn close(
    name: &str,
    a: &[Point],
    b: &[Point],
    r: f32,
    got: &RadiusNeighbors,
    want: &RadiusNeighbors,
) {
    let r2 = r as f64 * r as f64;
    let edge = |i: usize, j: u32| {
        let d = dist2_f64(&a[i], &b[j as usize]);
        (d - r2).abs() <= 1e-5 * r2.max(f64::MIN_POSITIVE)
    };
    for i in 0..a.len() {
        let (gi, gd) = got.row(i);
        let (wi, _) = want.row(i);
        for (&j, &d) in gi.iter().zip(gd) {
            let f = dist2(&a[i], &b[j as usize]);
            assert!(
                (d - f).abs() <= 1e-6 * f,
                "{name}: ({i}, {j}) reports d2 {d}, f32 distance {f}"
            );
            assert!(
                wi.contains(&j) || edge(i, j),
                "{name}: ({i}, {j}) at d2 {d} is not within r = {r}"
            );
        }
        for &j in wi {
            assert!(
                gi.contains(&j) || edge(i, j),
                "{name}: ({i}, {j}) at d2 {} is missing",
                dist2_f64(&a[i], &b[j as usize])
            );
        }
    }
}

/// `within(a, b, r)` and, on `a`, `self_pairs(a, r)`: shape, then the
/// reference (exactly where `exact_data`), then the same bits a second time.
fn compare(be: &WgpuBackend, name: &str, a: &[Point], b: &[Point], r: f32, exact_data: bool) {
    let rf = ReferenceBackend;
    for upper in [false, true] {
        let name = format!("{name}, {}", if upper { "self_pairs" } else { "within" });
        let b = if upper { a } else { b };
        let run = |be: &dyn NearestPairs| {
            if upper {
                be.self_pairs(a, r, usize::MAX)
            } else {
                be.within(a, b, r, usize::MAX)
            }
        };
        let got = run(be).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = run(&rf).unwrap_or_else(|e| panic!("{name}: reference: {e}"));
        check_shape(&name, &got, a.len(), upper);
        if exact_data {
            exact(&name, &got, &want);
        } else {
            close(&name, a, b, r, &got, &want);
        }
        let again = run(be).unwrap_or_else(|e| panic!("{name}: second run: {e}"));
        exact(&format!("{name}, second run"), &again, &got);
    }
}

#[test]
fn random_points_match_reference() {
    let Some(be) = backend() else { return };
    let a = pts(200, 1, |u| (10.0 * u) as f32);
    let b = pts(300, 2, |u| (10.0 * u) as f32);
    for r in [0.3, 1.5, 4.0] {
        compare(&be, &format!("random r={r}"), &a, &b, r, false);
    }
    // Queries far outside B's box on every side.
    let far = pts(60, 3, |u| (60.0 * u - 25.0) as f32);
    compare(&be, "queries outside", &far, &b, 6.0, false);
}

#[test]
fn lattice_ties_and_duplicates_match_reference() {
    let Some(be) = backend() else { return };
    let lattice: Vec<Point> = (0..6 * 6 * 6)
        .map(|t| [(t % 6) as f32, (t / 6 % 6) as f32, (t / 36) as f32])
        .collect();
    let queries = pts(80, 4, |u| (14.0 * u).floor() as f32 * 0.5 - 0.5);
    for r in [0.0, 1.0, 1.5, 2.0, 3.0] {
        compare(&be, &format!("lattice r={r}"), &queries, &lattice, r, true);
    }
    // Duplicates in A and B, and r = 0: only the copies pair up.
    let mut dup = vec![[2.0f32, 3.0, 4.0]; 50];
    dup.extend(std::iter::repeat_n([2.0f32, 3.0, 5.0], 40));
    dup.extend(lattice.iter().take(30));
    compare(&be, "duplicates r=0", &dup, &dup, 0.0, true);
    compare(&be, "duplicates r=1", &dup, &dup, 1.0, true);
}

/// Clusters give rows from a few pairs to more than 1024 (the workgroup
/// sort's steps in device memory) and, past the loop budget, rows the host
/// finishes on llvmpipe.
#[test]
fn clustered_points_and_long_rows_match_reference() {
    let Some(be) = backend() else { return };
    let mut r = lcg(5);
    let mut b: Vec<Point> = Vec::new();
    for (centre, n, spread) in [(0.0, 2600, 4.0), (100.0, 300, 2.0), (-80.0, 40, 1.0)] {
        for _ in 0..n {
            let mut c = || (centre + (r() * spread).floor()) as f32;
            b.push([c(), c(), c()]);
        }
    }
    let a: Vec<Point> = b.iter().step_by(37).copied().collect();
    compare(&be, "clusters r=1", &a, &b, 1.0, true);
    compare(&be, "clusters r=8", &a, &b, 8.0, true);
    // 4000 copies of one point beside the first cluster: any query whose
    // ball holds them scans more than the walk's budget on llvmpipe.
    let mut heavy = b.clone();
    heavy.extend(std::iter::repeat_n([10.0f32, 0.0, 0.0], 4000));
    let q = [
        [10.0f32, 1.0, 0.0],
        [2.0, 2.0, 2.0],
        [40.0, 0.0, 0.0],
        [10.0, 0.0, 0.0],
    ];
    for r in [0.5, 2.0, 12.0] {
        let got = be.within(&q, &heavy, r, usize::MAX).unwrap();
        let want = ReferenceBackend.within(&q, &heavy, r, usize::MAX).unwrap();
        check_shape("heavy", &got, q.len(), false);
        exact(&format!("heavy cell r={r}"), &got, &want);
    }
    // One row of 20,000 distinct pairs with many tied distances: sorted by a
    // workgroup through every merge width on a GPU (on llvmpipe the host
    // finishes it).
    let cube: Vec<Point> = (0..20_000)
        .map(|t| [(t % 25) as f32, (t / 25 % 25) as f32, (t / 625) as f32])
        .collect();
    let q = [[12.0f32, 12.0, 16.0], [0.0, 0.0, 0.0]];
    let got = be.within(&q, &cube, 100.0, usize::MAX).unwrap();
    let want = ReferenceBackend
        .within(&q, &cube, 100.0, usize::MAX)
        .unwrap();
    check_shape("one long row", &got, q.len(), false);
    exact("one long row", &got, &want);
}

#[test]
fn radius_edges_match_reference() {
    let Some(be) = backend() else { return };
    let a = pts(40, 6, |u| (8.0 * u).floor() as f32);
    let b = pts(70, 7, |u| (8.0 * u).floor() as f32);
    // r past the whole set: every pair, also where r * r overflows f32.
    for r in [100.0, 1e30, f32::MAX] {
        compare(&be, &format!("large r={r}"), &a, &b, r, true);
    }
    // Empty sets and one point.
    for (na, nb) in [(0, 5), (5, 0), (0, 0), (1, 1)] {
        let got = be.within(&a[..na], &b[..nb], 2.0, usize::MAX).unwrap();
        let want = ReferenceBackend
            .within(&a[..na], &b[..nb], 2.0, usize::MAX)
            .unwrap();
        exact(&format!("within |A|={na} |B|={nb}"), &got, &want);
    }
    for n in [0, 1] {
        let got = be.self_pairs(&a[..n], 2.0, usize::MAX).unwrap();
        assert_eq!(got.offsets, vec![0; n + 1], "self_pairs of {n} points");
        assert!(got.is_empty());
    }
    // Coordinates scaled by powers of two, whose squared distances leave
    // f32's range: the device sees them scaled back, d2 comes back as the
    // reference rounds it (inf, 0).
    for e in [100i32, -100, 40] {
        let s = 2f32.powi(e);
        let sa: Vec<Point> = a.iter().map(|p| p.map(|v| v * s)).collect();
        let sb: Vec<Point> = b.iter().map(|p| p.map(|v| v * s)).collect();
        compare(&be, &format!("scaled 2^{e}"), &sa, &sb, 2.0 * s, true);
    }
}

#[test]
fn max_pairs_is_checked_before_the_result() {
    let Some(be) = backend() else { return };
    let a = pts(30, 8, |u| (5.0 * u).floor() as f32);
    let all = be.within(&a, &a, 2.0, usize::MAX).unwrap();
    let n = all.len();
    assert!(n > 10);
    assert_eq!(be.within(&a, &a, 2.0, n).unwrap(), all);
    match be.within(&a, &a, 2.0, n - 1) {
        Err(Error::TooLarge {
            field,
            value,
            limit,
        }) => {
            assert_eq!(field, "pairs within r");
            assert_eq!((value, limit), (n as u128, n as u128 - 1));
        }
        other => panic!("within past max_pairs: {other:?}"),
    }
    let pairs = be.self_pairs(&a, 2.0, usize::MAX).unwrap().len();
    assert!(matches!(
        be.self_pairs(&a, 2.0, pairs - 1),
        Err(Error::TooLarge {
            field: "pairs within r",
            ..
        })
    ));
    assert!(matches!(
        be.self_pairs(&a, 2.0, 0),
        Err(Error::TooLarge { .. })
    ));
    // Past the host-finished rows of llvmpipe too.
    let heavy = vec![[1.0f32, 1.0, 1.0]; 5000];
    assert!(matches!(
        be.within(&heavy[..3], &heavy, 0.0, 14_999),
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(
        be.within(&heavy[..3], &heavy, 0.0, 15_000).unwrap().len(),
        15_000
    );
}

#[test]
fn bad_input_and_f64() {
    let Some(be) = backend() else { return };
    let a = [[0.0f32, 1.0, 2.0]];
    for r in [-1.0, f32::NAN, f32::INFINITY] {
        assert!(matches!(
            be.within(&a, &a, r, usize::MAX),
            Err(Error::InvalidArgument { field: "r", .. })
        ));
        assert!(matches!(
            be.self_pairs(&a, r, usize::MAX),
            Err(Error::InvalidArgument { field: "r", .. })
        ));
    }
    let bad = [[0.0f32, f32::NAN, 2.0]];
    assert!(be.within(&bad, &a, 1.0, usize::MAX).is_err());
    assert!(be.within(&a, &bad, 1.0, usize::MAX).is_err());
    assert!(be.self_pairs(&bad, 1.0, usize::MAX).is_err());
    // f64: valid input is handed on, with the reason; bad input is an error
    // of its own first.
    let a64 = [[0.0f64, 1.0, 2.0]];
    let be64: &dyn NearestPairs<f64> = &be;
    match be64.within(&a64, &a64, 1.0, usize::MAX) {
        Err(Error::Unsupported(why)) => assert!(why.contains("WGSL has no f64"), "{why}"),
        other => panic!("f64 within: {other:?}"),
    }
    assert!(matches!(
        be64.self_pairs(&a64, 1.0, usize::MAX),
        Err(Error::Unsupported(_))
    ));
    let mut out = [trident_core::Neighbor::<f64>::default()];
    assert!(matches!(
        be64.nearest(&a64, &a64, &mut out),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        be64.within(&a64, &a64, -1.0, usize::MAX),
        Err(Error::InvalidArgument { field: "r", .. })
    ));
    let bad64 = [[0.0f64, f64::INFINITY, 2.0]];
    let e = be64.nearest(&bad64, &a64, &mut out).unwrap_err();
    assert!(!matches!(e, Error::Unsupported(_)), "{e:?}");
    let e = be64.self_pairs(&bad64, 1.0, usize::MAX).unwrap_err();
    assert!(!matches!(e, Error::Unsupported(_)), "{e:?}");
}
