use trident_core::{Dir, FlowArc, FlowNetwork, GridGraph, MaxFlow};
use trident_reference::certify;

use crate::{Rng, backend};

/// Brute force over all cuts: the min cut capacity and the canonical (smallest)
/// min-cut source side, the intersection of all minimum cuts' source sides.
fn brute_min_cut(g: &FlowNetwork) -> (i64, Vec<bool>) {
    let n = g.nodes();
    let (s, t) = (g.source() as usize, g.sink() as usize);
    let others: Vec<usize> = (0..n).filter(|&v| v != s && v != t).collect();
    let mut best = i64::MAX;
    let mut inter = vec![true; n];
    for mask in 0u32..(1 << others.len()) {
        let mut side = vec![false; n];
        side[s] = true;
        for (b, &v) in others.iter().enumerate() {
            side[v] = mask >> b & 1 == 1;
        }
        let c = g.cut_capacity(&side);
        if c < best {
            best = c;
            inter = side;
        } else if c == best {
            for v in 0..n {
                inter[v] &= side[v];
            }
        }
    }
    (best, inter)
}

fn random_network(rng: &mut Rng, n: usize, m: usize, max_cap: usize) -> FlowNetwork {
    let arcs = (0..m)
        .map(|_| FlowArc {
            from: rng.below(n) as u32,
            to: rng.below(n) as u32, // self loops and parallel arcs included
            cap: rng.below(max_cap + 1) as i64,
        })
        .collect();
    let s = rng.below(n) as u32;
    let t = (s + 1 + rng.below(n - 1) as u32) % n as u32;
    FlowNetwork::new(n, s, t, arcs).unwrap()
}

#[test]
fn random_networks_match_brute_force() {
    let mut rng = Rng::new(10);
    for _ in 0..300 {
        let n = 2 + rng.below(8);
        let (m, c) = (rng.below(25), 1 + rng.below(9));
        let g = random_network(&mut rng, n, m, c);
        let r = backend().network_flow(&g).unwrap();
        let (cut, side) = brute_min_cut(&g);
        assert_eq!(r.flow, cut);
        assert_eq!(r.source_side, side);
        assert_eq!(certify::network_flow(&g, &r), Ok(0.0));
    }
}

#[test]
fn edge_networks() {
    let be = backend();
    // No arcs.
    let g = FlowNetwork::new(3, 2, 0, vec![]).unwrap();
    let r = be.network_flow(&g).unwrap();
    assert_eq!(
        (r.flow, r.source_side.clone()),
        (0, vec![false, false, true])
    );
    assert_eq!(certify::network_flow(&g, &r), Ok(0.0));
    // Disconnected: t unreachable, zero capacities, a self loop, parallel arcs.
    let arcs = vec![
        FlowArc {
            from: 0,
            to: 1,
            cap: 4,
        },
        FlowArc {
            from: 0,
            to: 1,
            cap: 3,
        },
        FlowArc {
            from: 1,
            to: 1,
            cap: 9,
        },
        FlowArc {
            from: 1,
            to: 2,
            cap: 0,
        },
        FlowArc {
            from: 3,
            to: 2,
            cap: 5,
        },
    ];
    let g = FlowNetwork::new(4, 0, 2, arcs).unwrap();
    let r = be.network_flow(&g).unwrap();
    assert_eq!(
        (r.flow, r.source_side.clone()),
        (0, vec![true, true, false, false])
    );
    assert_eq!(r.arc_flow, vec![0; 5]);
    // Parallel arcs add up; arcs into s and out of t carry nothing useful.
    let arcs = vec![
        FlowArc {
            from: 0,
            to: 1,
            cap: 4,
        },
        FlowArc {
            from: 0,
            to: 1,
            cap: 3,
        },
        FlowArc {
            from: 1,
            to: 0,
            cap: 8,
        },
        FlowArc {
            from: 2,
            to: 1,
            cap: 8,
        },
        FlowArc {
            from: 1,
            to: 2,
            cap: 10,
        },
    ];
    let g = FlowNetwork::new(3, 0, 2, arcs).unwrap();
    let r = be.network_flow(&g).unwrap();
    assert_eq!(r.flow, 7);
    assert_eq!(r.source_side, vec![true, false, false]);
    assert_eq!(certify::network_flow(&g, &r), Ok(0.0));
}

#[test]
fn certificate_rejects_wrong_answers() {
    let g = FlowNetwork::new(
        3,
        0,
        2,
        vec![
            FlowArc {
                from: 0,
                to: 1,
                cap: 2,
            },
            FlowArc {
                from: 1,
                to: 2,
                cap: 1,
            },
        ],
    )
    .unwrap();
    let good = backend().network_flow(&g).unwrap();
    assert_eq!(good.source_side, vec![true, true, false]);
    let mut r = good.clone();
    r.arc_flow = vec![2, 1]; // not conserved
    assert!(certify::network_flow(&g, &r).is_err());
    let mut r = good.clone();
    r.source_side = vec![true, false, false]; // a min cut, but not the canonical one
    assert!(
        certify::network_flow(&g, &r)
            .unwrap_err()
            .contains("cut capacity")
    );
    let mut r = good.clone();
    r.flow = 0;
    r.arc_flow = vec![0, 0];
    assert!(certify::network_flow(&g, &r).is_err());
}

/// The grid as an explicit network (s = N, t = N + 1), for brute force.
fn grid_as_network(g: &GridGraph) -> FlowNetwork {
    let n = g.nodes();
    let mut arcs = Vec::new();
    for v in 0..n {
        arcs.push(FlowArc {
            from: n as u32,
            to: v as u32,
            cap: g.source()[v],
        });
        arcs.push(FlowArc {
            from: v as u32,
            to: n as u32 + 1,
            cap: g.sink()[v],
        });
        for &dir in g.dirs() {
            if let Some(u) = g.neighbor(v, dir) {
                arcs.push(FlowArc {
                    from: v as u32,
                    to: u as u32,
                    cap: g.plane(dir)[v],
                });
            }
        }
    }
    FlowNetwork::new(n + 2, n as u32, n as u32 + 1, arcs).unwrap()
}

fn random_grid(
    rng: &mut Rng,
    d: usize,
    h: usize,
    w: usize,
    three_d: bool,
    max_cap: usize,
) -> GridGraph {
    let n = d * h * w;
    let cap = |rng: &mut Rng| rng.below(max_cap + 1) as i64;
    let source = (0..n).map(|_| cap(rng)).collect();
    let sink = (0..n).map(|_| cap(rng)).collect();
    let dirs: &[Dir] = if three_d { &Dir::ALL } else { &Dir::ALL[..4] };
    let mut caps = vec![0i64; dirs.len() * n];
    // Build a throwaway grid to ask for neighbours.
    let probe = if three_d {
        GridGraph::new_3d(d, h, w, vec![0; n], vec![0; n], vec![0; 6 * n]).unwrap()
    } else {
        GridGraph::new_2d(h, w, vec![0; n], vec![0; n], vec![0; 4 * n]).unwrap()
    };
    for (di, &dir) in dirs.iter().enumerate() {
        for v in 0..n {
            if probe.neighbor(v, dir).is_some() {
                caps[di * n + v] = cap(rng);
            }
        }
    }
    if three_d {
        GridGraph::new_3d(d, h, w, source, sink, caps).unwrap()
    } else {
        GridGraph::new_2d(h, w, source, sink, caps).unwrap()
    }
}

#[test]
fn small_grids_match_brute_force() {
    let mut rng = Rng::new(11);
    for t in 0..120 {
        let three_d = t % 3 == 0;
        let (d, h, w) = if three_d {
            (1 + rng.below(2), 1 + rng.below(2), 1 + rng.below(3))
        } else {
            (1, 1 + rng.below(3), 1 + rng.below(4))
        };
        let c = rng.below(6);
        let g = random_grid(&mut rng, d, h, w, three_d, c);
        let r = backend().grid_cut(&g).unwrap();
        let net = grid_as_network(&g);
        let (cut, side) = brute_min_cut(&net);
        assert_eq!(r.flow, cut);
        assert_eq!(r.source_side, side[..g.nodes()]);
        assert_eq!(certify::grid_cut(&g, &r), Ok(0.0));
        // The network path gives the same answer.
        let rn = backend().network_flow(&net).unwrap();
        assert_eq!(
            (rn.flow, &rn.source_side[..g.nodes()]),
            (r.flow, &r.source_side[..])
        );
    }
}

#[test]
fn larger_grids_certify() {
    let mut rng = Rng::new(12);
    let g = random_grid(&mut rng, 1, 48, 64, false, 20);
    let r = backend().grid_cut(&g).unwrap();
    assert_eq!(certify::grid_cut(&g, &r), Ok(0.0));
    let g = random_grid(&mut rng, 6, 10, 12, true, 9);
    let r = backend().grid_cut(&g).unwrap();
    assert_eq!(certify::grid_cut(&g, &r), Ok(0.0));
    // All-zero grid: nothing reachable, no flow.
    let g = GridGraph::new_2d(3, 3, vec![0; 9], vec![0; 9], vec![0; 36]).unwrap();
    let r = backend().grid_cut(&g).unwrap();
    assert_eq!((r.flow, r.source_side), (0, vec![false; 9]));
}

#[test]
fn long_path_grid_needs_no_recursion() {
    // A 1 x 50000 line: source at the left end, sink at the right end, so the
    // only augmenting path is 50000 arcs long. The sink arc is the bottleneck,
    // so every node stays reachable from s.
    let w = 50_000;
    let mut source = vec![0i64; w];
    let mut sink = vec![0i64; w];
    source[0] = 6;
    sink[w - 1] = 5;
    let mut caps = vec![0i64; 4 * w];
    for v in 0..w - 1 {
        caps[v] = 7; // PosX
    }
    let g = GridGraph::new_2d(1, w, source, sink, caps).unwrap();
    let r = backend().grid_cut(&g).unwrap();
    assert_eq!(r.flow, 5);
    assert!(r.source_side.iter().all(|&b| b));
    assert_eq!(certify::grid_cut(&g, &r), Ok(0.0));
}

#[test]
fn grid_certificate_rejects_wrong_answers() {
    let g = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let mut r = backend().grid_cut(&g).unwrap();
    assert_eq!((r.flow, r.source_side.clone()), (3, vec![true, false]));
    r.flow = 4;
    assert!(certify::grid_cut(&g, &r).is_err());
    r.flow = 3;
    r.source_side = vec![false, true];
    assert!(certify::grid_cut(&g, &r).is_err());
}
