//! MaxFlow on the rayon backend against the reference (Dinic): random
//! networks, genrmf, hand-made corner cases, and grids larger than the
//! conformance suite's. Seeds come from `TRIDENT_SEED`; a failure prints the
//! case and seed to rerun.
#![allow(missing_docs)]

use trident_core::{FlowArc, FlowNetwork, GridGraph, MaxFlow};
use trident_rayon::RayonBackend;
use trident_reference::ReferenceBackend;
use trident_testkit::{cases, check, seed_from_env};

fn backends() -> (RayonBackend, ReferenceBackend) {
    (
        RayonBackend::new().expect("rayon backend"),
        ReferenceBackend::new().expect("reference backend"),
    )
}

/// Solves `g` on both backends and panics with `what` and the verdict unless
/// the rayon answer passes the contract's check (flow, labels, arc flows).
fn same_network(what: &str, g: &FlowNetwork) {
    let (rayon, reference) = backends();
    let want = reference.network_flow(g).expect("reference");
    let got = rayon.network_flow(g).expect("rayon");
    let v = check::network_flow(g, &want, &got);
    assert!(
        v.passed(),
        "{what}: {}\n  repro: TRIDENT_SEED={:#x}",
        v.summary(),
        seed_from_env()
    );
    // Deterministic: a second run is bit-identical.
    assert_eq!(
        rayon.network_flow(g).expect("rayon"),
        got,
        "{what}: rerun differs"
    );
}

fn same_grid(what: &str, g: &GridGraph) {
    let (rayon, reference) = backends();
    let want = reference.grid_cut(g).expect("reference");
    let got = rayon.grid_cut(g).expect("rayon");
    let v = check::grid_cut(g, &want, &got);
    assert!(
        v.passed(),
        "{what}: {}\n  repro: TRIDENT_SEED={:#x}",
        v.summary(),
        seed_from_env()
    );
}

fn net(nodes: usize, s: u32, t: u32, arcs: &[(u32, u32, i64)]) -> FlowNetwork {
    let arcs = arcs
        .iter()
        .map(|&(from, to, cap)| FlowArc { from, to, cap })
        .collect();
    FlowNetwork::new(nodes, s, t, arcs).expect("hand-made network is valid")
}

#[test]
fn random_networks_match_reference() {
    let base = seed_from_env();
    for i in 0..300u64 {
        let seed = base.wrapping_add(i);
        let nodes = 2 + (i as usize % 40);
        let arcs = (i as usize * 7) % 200;
        let cap = [1, 3, 50, 1_000_000][i as usize % 4];
        let g = cases::random_network(nodes, arcs, cap, seed);
        same_network(
            &format!("random_network({nodes}, {arcs}, {cap}, {seed:#x})"),
            &g,
        );
    }
    // Larger and denser ones, where the gap heuristic and global relabels fire.
    for (i, &(nodes, arcs)) in [(500, 4_000), (2_000, 8_000), (3_000, 40_000)]
        .iter()
        .enumerate()
    {
        let seed = base.wrapping_add(1000 + i as u64);
        let g = cases::random_network(nodes, arcs, 100, seed);
        same_network(
            &format!("random_network({nodes}, {arcs}, 100, {seed:#x})"),
            &g,
        );
    }
}

#[test]
fn genrmf_matches_reference() {
    let base = seed_from_env();
    for (i, &(a, b, c1, c2)) in [
        (2, 2, 1, 1),
        (3, 5, 1, 100),
        (4, 4, 0, 10),
        (8, 6, 1, 10_000),
        (12, 12, 1, 100),
        (20, 20, 1, 100),
    ]
    .iter()
    .enumerate()
    {
        let seed = base.wrapping_add(i as u64);
        let g = cases::genrmf(a, b, c1, c2, seed);
        same_network(&format!("genrmf({a}, {b}, {c1}, {c2}, {seed:#x})"), &g);
    }
}

#[test]
fn parallel_arcs_and_self_loops() {
    let g = net(
        4,
        0,
        3,
        &[
            (0, 1, 2),
            (0, 1, 3),
            (1, 1, 9),
            (1, 0, 4),
            (1, 2, 1),
            (1, 2, 1),
            (2, 3, 10),
            (0, 0, 5),
            (3, 3, 1),
            (2, 1, 7),
        ],
    );
    same_network("parallel arcs and self loops", &g);
    let r = RayonBackend::new().unwrap().network_flow(&g).unwrap();
    assert_eq!(r.flow, 2);
    // Self loops carry nothing; each parallel arc has its own flow.
    assert_eq!((r.arc_flow[2], r.arc_flow[7], r.arc_flow[8]), (0, 0, 0));
    assert_eq!((r.arc_flow[4], r.arc_flow[5]), (1, 1));
    assert_eq!(r.arc_flow[0] + r.arc_flow[1] - r.arc_flow[3], 2);
    // Many parallel arcs between the same pair, some saturated, some not.
    let arcs: Vec<(u32, u32, i64)> = (0..50)
        .map(|i| (0, 1, i % 7))
        .chain((0..30).map(|i| (1, 2, i % 5 + 1)))
        .collect();
    same_network("50 + 30 parallel arcs", &net(3, 0, 2, &arcs));
}

#[test]
fn disconnected_and_zero_capacities() {
    same_network("no arcs", &net(2, 0, 1, &[]));
    same_network("t before s", &net(2, 1, 0, &[(1, 0, 11)]));
    same_network(
        "disconnected",
        &net(
            6,
            0,
            5,
            &[(0, 1, 3), (1, 2, 4), (2, 0, 1), (3, 4, 5), (4, 5, 6)],
        ),
    );
    same_network(
        "zero capacities",
        &net(4, 0, 3, &[(0, 1, 0), (1, 3, 5), (0, 2, 4), (2, 3, 0)]),
    );
    same_network(
        "all zero",
        &net(5, 2, 4, &[(2, 0, 0), (0, 4, 0), (2, 4, 0), (4, 2, 0)]),
    );
    same_network(
        "arcs into s and out of t",
        &net(
            4,
            1,
            2,
            &[(0, 1, 5), (1, 3, 4), (3, 2, 3), (2, 0, 8), (2, 3, 2)],
        ),
    );
    // Isolated nodes around a path whose excess must flow back to s (the
    // middle bottleneck strands excess at node 1).
    same_network(
        "excess returned to s",
        &net(
            8,
            0,
            7,
            &[(0, 1, 100), (1, 2, 1), (2, 7, 100), (1, 3, 50), (3, 1, 20)],
        ),
    );
}

#[test]
fn large_capacities_use_i64() {
    let big = i64::MAX / 5;
    let g = net(
        4,
        0,
        3,
        &[
            (0, 1, big),
            (0, 2, big),
            (1, 3, big),
            (2, 3, 5),
            (1, 2, big),
        ],
    );
    same_network("capacities beyond i32", &g);
    let r = RayonBackend::new().unwrap().network_flow(&g).unwrap();
    assert_eq!(r.flow, big + 5);
}

#[test]
fn larger_grids_match_reference() {
    let base = seed_from_env();
    // cut-512 is the contract's small cut case; random grids stress asymmetric
    // capacities and 3-D neighbourhoods.
    same_grid(&format!("cut(512, {base:#x})"), &cases::cut(512, base));
    for (i, &(d, h, w, three, cap)) in [
        (1, 300, 300, false, 20),
        (1, 200, 257, false, 1_000),
        (24, 40, 48, true, 20),
        // Residuals beyond i32: the i64 node layout.
        (1, 64, 80, false, 3_000_000_000),
        (6, 20, 30, true, 3_000_000_000),
    ]
    .iter()
    .enumerate()
    {
        let seed = base.wrapping_add(i as u64);
        let g = cases::random_grid(d, h, w, three, cap, seed);
        same_grid(
            &format!("random_grid({d}, {h}, {w}, {three}, {cap}, {seed:#x})"),
            &g,
        );
    }
}
