//! The NearestPairs cases of the catalog ([`crate::cases`]): the random
//! contract-family cases at each size, then the edge cases.

use crate::cases::catalog::{add, pick};
use crate::cases::*;

fn pc(
    a: Vec<trident_core::Point>,
    b: Vec<trident_core::Point>,
    knn_k: usize,
    pairs_k: usize,
) -> Input {
    Input::Pairs(PairsCase::new(a, b, knn_k, pairs_k))
}

pub(crate) fn pairs_cases(size: Size) -> Vec<Case> {
    let p = "nearest_pairs";
    let mut v = Vec::new();
    let (na, nb) = pick(size, (2000usize, 1000usize), (200_000, 80_000));
    let tag = |n: usize| {
        if n >= 1000 && n.is_multiple_of(1000) {
            format!("{}K", n / 1000)
        } else {
            n.to_string()
        }
    };
    let (ta, tb) = (tag(na), tag(nb));
    add(
        &mut v,
        format!("pairs-uniform-{ta}-{tb}"),
        p,
        false,
        move |s| Input::Pairs(pairs_uniform(na, nb, s)),
    );
    add(
        &mut v,
        format!("pairs-clustered-{ta}-{tb}"),
        p,
        false,
        move |s| Input::Pairs(pairs_clustered(na, nb, s)),
    );
    add(&mut v, "pairs-edge-empty-a".into(), p, true, |s| {
        pc(vec![], uniform_points(5, s), 2, 3)
    });
    add(&mut v, "pairs-edge-single-b".into(), p, true, |s| {
        pc(uniform_points(20, s), vec![[1.0, 2.0, 3.0]], 1, 5)
    });
    add(&mut v, "pairs-edge-single-point".into(), p, true, |_| {
        pc(vec![[4.0, 5.0, 6.0]], vec![[4.0, 5.0, 6.0]], 1, 1)
    });
    add(&mut v, "pairs-edge-duplicates".into(), p, true, |s| {
        // B holds every point 3 times; A contains some of B's points exactly.
        let base = uniform_points(30, s);
        let b: Vec<_> = (0..3).flat_map(|_| base.iter().copied()).collect();
        let mut a = uniform_points(40, s ^ 1);
        a.extend_from_slice(&base[..10]);
        pc(a, b, 5, 20)
    });
    add(&mut v, "pairs-edge-equidistant".into(), p, true, |_| {
        // The origin's six axis neighbours at distance 1 (and the eight cube
        // corners at distance 3): exact ties resolved by index.
        let mut b = vec![];
        for d in 0..3 {
            for s in [1.0f32, -1.0] {
                let mut q = [0.0; 3];
                q[d] = s;
                b.push(q);
            }
        }
        for c in 0..8 {
            b.push([
                if c & 1 == 0 { 1.0 } else { -1.0 },
                if c & 2 == 0 { 1.0 } else { -1.0 },
                if c & 4 == 0 { 1.0 } else { -1.0 },
            ]);
        }
        pc(vec![[0.0; 3], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]], b, 10, 3)
    });
    add(&mut v, "pairs-edge-lattice".into(), p, true, |s| {
        // Queries at cell centres of an integer lattice: 8 equidistant points.
        let b = lattice_points(6, s);
        let a: Vec<_> = lattice_points(5, s ^ 1)
            .iter()
            .map(|q| [q[0] + 0.5, q[1] + 0.5, q[2] + 0.5])
            .collect();
        pc(a, b, 9, 50)
    });
    add(&mut v, "pairs-edge-k-equals-b".into(), p, true, |s| {
        pc(uniform_points(15, s), uniform_points(7, s ^ 1), 7, 15)
    });
    add(&mut v, "pairs-edge-k0".into(), p, true, |s| {
        pc(uniform_points(15, s), uniform_points(7, s ^ 1), 0, 0)
    });
    add(&mut v, "pairs-edge-pairs-k-above-a".into(), p, true, |s| {
        pc(uniform_points(6, s), uniform_points(9, s ^ 1), 3, 100)
    });
    add(&mut v, "pairs-edge-a-equals-b".into(), p, true, |s| {
        let a = uniform_points(50, s);
        pc(a.clone(), a, 4, 10)
    });
    add(
        &mut v,
        "pairs-edge-fractional-negative".into(),
        p,
        true,
        |s| {
            let f = |pts: Vec<trident_core::Point>| {
                pts.iter()
                    .map(|q| q.map(|c| (c - 5e5) * 1e-3 + 0.1))
                    .collect::<Vec<_>>()
            };
            pc(
                f(uniform_points(300, s)),
                f(uniform_points(200, s ^ 1)),
                6,
                40,
            )
        },
    );
    // f64 coordinates: the same families in f64, and what f32 cannot hold.
    let (ua, ub) = pick(size, (1500usize, 1000usize), (100_000, 60_000));
    add(
        &mut v,
        format!("pairs-utm-f64-{}-{}", tag(ua), tag(ub)),
        p,
        false,
        move |s| Input::new(pairs_utm(ua, ub, s)),
    );
    add(
        &mut v,
        format!("pairs-uniform-f64-{ta}-{tb}"),
        p,
        false,
        move |s| Input::new(to_f64_case(&pairs_uniform(na, nb, s))),
    );
    add(&mut v, "pairs-edge-lattice-f64".into(), p, true, |s| {
        let b = lattice_points(6, s);
        let a: Vec<_> = lattice_points(5, s ^ 1)
            .iter()
            .map(|q| [q[0] + 0.5, q[1] + 0.5, q[2] + 0.5])
            .collect();
        let mut c = to_f64_case(&PairsCase::new(a, b, 9, 50));
        // Radius 1.5: each lattice point's 18 neighbours at 1 and sqrt(2),
        // and none at sqrt(3) = 1.73.
        c.radius = 1.5;
        Input::new(c)
    });
    add(&mut v, "pairs-edge-duplicates-f64".into(), p, true, |s| {
        let base = uniform_points(30, s);
        let b: Vec<_> = (0..3).flat_map(|_| base.iter().copied()).collect();
        let mut a = uniform_points(40, s ^ 1);
        a.extend_from_slice(&base[..10]);
        Input::new(to_f64_case(&PairsCase::new(a, b, 5, 20)))
    });
    // f64 coordinates at the ends of the range are known-answer cases of
    // the conformance suite (their distances are beyond what a checker in
    // f64 can hold).
    v
}

/// The contract's NearestPairs benchmark cases at full size ([`crate::cases::spec_cases`]).
pub(crate) fn pairs_spec_cases() -> Vec<Case> {
    let p = "nearest_pairs";
    let mut v = Vec::new();
    add(&mut v, "pairs-1M-400K".into(), p, false, |s| {
        Input::new(pairs_uniform(1_000_000, 400_000, s))
    });
    add(&mut v, "pairs-clustered".into(), p, false, |s| {
        Input::new(pairs_clustered(1_000_000, 400_000, s))
    });
    v
}
