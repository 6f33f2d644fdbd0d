//! NearestPairs on very uneven data against the reference backend: B packed
//! into a few cells (tens of thousands of points, many duplicates) in one
//! corner of its box, an outlier in the opposite corner, and queries far from
//! both, on exact ties and on points of B. On llvmpipe these walk thousands of
//! empty cells and scan cells of ~10^4 points, past Mesa's cap of 65535 loop
//! iterations per shader: each such query must run out of its loop budget and
//! be finished by the host, never come back cut off. Checked twice: by the
//! shared checkers (`trident_testkit::check`, the contract's tolerances) and
//! index by index against the reference (coordinates below 2^11, so every f32
//! distance is exact and ties go to the smaller index).
//! B's kept index (`NearestIndexDevice`) is held to the same answers.
//! An unavailable backend is reported as SKIPPED unless named in
//! TRIDENT_REQUIRE_BACKENDS.
#![allow(missing_docs)]

use trident_core::{DeviceMemory, Error, NearestIndexDevice, NearestPairs, Neighbor, Point};
use trident_reference::ReferenceBackend;
use trident_testkit::nearest_pairs::generate::PairsCase;
use trident_testkit::problem::Input;
use trident_wgpu::WgpuBackend;

fn lcg(seed: u64) -> impl FnMut(u64) -> f32 {
    let mut s = seed;
    move |m| {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((s >> 33) % m) as f32
    }
}

/// B: 30,000 points on a 12^3 lattice in the corner near (-1000, -1000,
/// -1000) (about 17 copies of each lattice point), one outlier at (1000, 1000,
/// 1000), then 500 exact copies of one point. A: queries in the empty middle,
/// beside the cluster, halfway between two lattice points (ties) and on points
/// of B (distance 0, duplicates).
fn uneven() -> (Vec<Point>, Vec<Point>) {
    let mut r = lcg(0x5eed);
    let mut b: Vec<Point> = (0..30_000)
        .map(|_| [-1000.0 + r(12), -1000.0 + r(12), -1000.0 + r(12)])
        .collect();
    b.push([1000.0, 1000.0, 1000.0]);
    b.extend(std::iter::repeat_n([-995.0, -995.0, -995.0], 500));
    let mut a: Vec<Point> = (0..40)
        .map(|_| [r(1200) - 600.0, r(1200) - 600.0, r(1200) - 600.0])
        .collect();
    a.extend((0..30).map(|_| [-1010.0 + r(30), -1010.0 + r(30), -1010.0 + r(30)]));
    // Halfway between lattice points two apart along x: an exact tie.
    a.extend((0..20).map(|_| [-999.0 + 2.0 * r(5), -1000.0 + r(12), -1000.0 + r(12)]));
    a.extend((0..20).map(|t| b[t * 97]));
    a.push([0.0, 0.0, 0.0]);
    a.push([990.0, 990.0, 990.0]);
    a.push([-995.0, -995.0, -995.0]);
    (a, b)
}

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

#[test]
fn uneven_data_matches_reference() {
    let Some(be) = backend() else {
        return;
    };
    let (a, b) = uneven();
    for (knn_k, pairs_k) in [(1, 1), (8, 20), (3, a.len() + 5)] {
        // Radius 0.5: the lattice's coincident copies (17 per point, 500 of
        // one), not the even-spread default, which here would be 4.6e8 pairs.
        let mut case = PairsCase::new(a.clone(), b.clone(), knn_k, pairs_k);
        case.radius = 0.5;
        let input = Input::Pairs(case);
        let exp = input.expected(&ReferenceBackend).unwrap();
        let got = input.produce(&be).unwrap();
        let v = input.compare(&exp, &got);
        assert!(
            v.passed(),
            "knn k = {knn_k}, pairs k = {pairs_k}: {}",
            v.summary()
        );
    }
    // Index by index (exact distances, ties to the smaller index).
    let k = 6;
    let (mut want, mut got) = (vec![Neighbor::default(); a.len()], vec![]);
    ReferenceBackend.nearest(&a, &b, &mut want).unwrap();
    got.resize(a.len(), Neighbor::default());
    be.nearest(&a, &b, &mut got).unwrap();
    assert_eq!(got, want, "nearest");
    let (mut want, mut got) = (vec![Neighbor::default(); a.len() * k], vec![]);
    ReferenceBackend.knn(&a, &b, k, &mut want).unwrap();
    got.resize(a.len() * k, Neighbor::default());
    be.knn(&a, &b, k, &mut got).unwrap();
    assert_eq!(got, want, "knn");
    let want = ReferenceBackend.closest_pairs(&a, &b, 50).unwrap();
    assert_eq!(be.closest_pairs(&a, &b, 50).unwrap(), want, "closest_pairs");
}

/// B's kept index answers as the plain device calls (the shared suite), and
/// on the uneven data as the reference: on llvmpipe its queries that run out
/// of loop budget are finished on the host from the index's own points.
#[test]
fn a_kept_index_matches_plain_calls_and_reference() {
    let Some(be) = backend() else {
        return;
    };
    trident_testkit::nearest_pairs::device::kept_index_matches_plain_calls(
        &be,
        trident_testkit::DEFAULT_SEED,
    );
    let (a, b) = uneven();
    let index = be.index_points(&be.upload(&b).unwrap()).unwrap();
    let da = be.upload(&a).unwrap();
    let mut out = be.alloc_zeroed::<Neighbor>(a.len()).unwrap();
    be.nearest_indexed(&da, &index, &mut out).unwrap();
    let (mut want, mut got) = (vec![Neighbor::default(); a.len()], vec![]);
    ReferenceBackend.nearest(&a, &b, &mut want).unwrap();
    got.resize(a.len(), Neighbor::default());
    be.download(&out, &mut got).unwrap();
    assert_eq!(got, want, "nearest_indexed");
    assert_eq!(
        be.closest_pairs_indexed(&da, &index, 50).unwrap(),
        ReferenceBackend.closest_pairs(&a, &b, 50).unwrap(),
        "closest_pairs_indexed"
    );
}
