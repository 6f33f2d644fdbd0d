//! The MaxFlow cases of the catalog ([`crate::cases`]): the random
//! contract-family cases at each size, then the edge cases.

use trident_core::*;

use crate::cases::catalog::{add, pick};
use crate::cases::*;

fn grid2(h: usize, w: usize, source: Vec<i64>, sink: Vec<i64>, caps: Vec<i64>) -> Input {
    Input::Grid(GridGraph::new_2d(h, w, source, sink, caps).expect("hand-made grid is valid"))
}

fn net(nodes: usize, s: u32, t: u32, arcs: &[(u32, u32, i64)]) -> Input {
    let arcs = arcs
        .iter()
        .map(|&(from, to, cap)| FlowArc { from, to, cap })
        .collect();
    Input::Network(FlowNetwork::new(nodes, s, t, arcs).expect("hand-made network is valid"))
}

pub(crate) fn flow_cases(size: Size) -> Vec<Case> {
    let p = "max_flow";
    let mut v = Vec::new();
    let n = pick(size, 32usize, 512);
    let (ra, rb) = pick(size, (4usize, 4usize), (20, 20));
    add(&mut v, format!("cut-{n}"), p, false, move |s| {
        Input::Grid(cut(n, s))
    });
    add(&mut v, format!("flow-rmf-{ra}-{rb}"), p, false, move |s| {
        Input::Network(genrmf(ra, rb, 1, 100, s))
    });
    let (gd, gh, gw) = pick(size, (4usize, 6usize, 6usize), (32, 64, 64));
    add(
        &mut v,
        format!("grid3d-random-{gd}x{gh}x{gw}"),
        p,
        false,
        move |s| Input::Grid(random_grid(gd, gh, gw, true, 20, s)),
    );
    let (rn, rm) = pick(size, (60usize, 300usize), (5_000, 40_000));
    add(
        &mut v,
        format!("flow-random-{rn}-{rm}"),
        p,
        false,
        move |s| Input::Network(random_network(rn, rm, 50, s)),
    );
    if size == Size::Small {
        // Big enough for a schedule-dependent device solve to show in the
        // per-arc flows (the determinism check runs it several times).
        add(&mut v, "flow-random-1000-8000".into(), p, false, |s| {
            Input::Network(random_network(1000, 8000, 50, s))
        });
    }
    // Parallel push-relabel's worst case: flow that must travel one long
    // path. The GPU backends bound their device work and finish on the host.
    let pl = pick(size, 200_000usize, 2_000_000);
    add(&mut v, format!("flow-path-1x{pl}"), p, false, move |s| {
        Input::Grid(path_grid(pl, s))
    });
    add(&mut v, format!("flow-chain-{pl}"), p, false, move |s| {
        Input::Network(path_network(pl, s))
    });
    // Edge cases.
    add(&mut v, "flow-edge-grid-empty".into(), p, true, |_| {
        grid2(0, 0, vec![], vec![], vec![])
    });
    add(&mut v, "flow-edge-grid-1x1".into(), p, true, |_| {
        grid2(1, 1, vec![5], vec![3], vec![0; 4])
    });
    add(&mut v, "flow-edge-grid-zero-caps".into(), p, true, |_| {
        grid2(3, 4, vec![0; 12], vec![0; 12], vec![0; 48])
    });
    add(
        &mut v,
        "flow-edge-grid-disconnected".into(),
        p,
        true,
        |_| {
            // Source links on the left column, sink links on the right, no arcs.
            let (h, w) = (4, 5);
            let source = (0..h * w).map(|v| if v % w == 0 { 7 } else { 0 }).collect();
            let sink = (0..h * w)
                .map(|v| if v % w == w - 1 { 7 } else { 0 })
                .collect();
            grid2(h, w, source, sink, vec![0; 4 * h * w])
        },
    );
    add(
        &mut v,
        "flow-edge-grid-uniform-ties".into(),
        p,
        true,
        |_| {
            // Every capacity equal: many minimum cuts, one canonical answer.
            let (h, w) = (5, 6);
            let nodes = h * w;
            let shape = GridGraph::new_2d(h, w, vec![0; nodes], vec![0; nodes], vec![0; 4 * nodes])
                .unwrap();
            let caps = (0..4 * nodes)
                .map(|i| {
                    if shape.neighbor(i % nodes, Dir::ALL[i / nodes]).is_some() {
                        2
                    } else {
                        0
                    }
                })
                .collect();
            grid2(h, w, vec![3; nodes], vec![3; nodes], caps)
        },
    );
    add(&mut v, "flow-edge-grid3d-1x1x2".into(), p, true, |_| {
        Input::Grid(
            GridGraph::new_3d(
                2,
                1,
                1,
                vec![9, 0],
                vec![0, 4],
                vec![0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 2],
            )
            .unwrap(),
        )
    });
    add(&mut v, "flow-edge-net-no-arcs".into(), p, true, |_| {
        net(2, 0, 1, &[])
    });
    add(&mut v, "flow-edge-net-direct".into(), p, true, |_| {
        net(2, 1, 0, &[(1, 0, 11)])
    });
    add(&mut v, "flow-edge-net-disconnected".into(), p, true, |_| {
        net(
            6,
            0,
            5,
            &[(0, 1, 3), (1, 2, 4), (2, 0, 1), (3, 4, 5), (4, 5, 6)],
        )
    });
    add(&mut v, "flow-edge-net-zero-caps".into(), p, true, |_| {
        net(4, 0, 3, &[(0, 1, 0), (1, 3, 5), (0, 2, 4), (2, 3, 0)])
    });
    add(
        &mut v,
        "flow-edge-net-parallel-selfloop".into(),
        p,
        true,
        |_| {
            net(
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
            )
        },
    );
    add(&mut v, "flow-edge-net-into-source".into(), p, true, |_| {
        // Arcs into s and out of t carry no flow.
        net(
            4,
            1,
            2,
            &[(0, 1, 5), (1, 3, 4), (3, 2, 3), (2, 0, 8), (2, 3, 2)],
        )
    });
    v
}

/// The contract's MaxFlow benchmark cases at full size ([`crate::cases::spec_cases`]).
/// `flow-rmf` is genrmf(a = 32, b = 64, c1 = 1, c2 = 10000): 65,536 nodes,
/// about 330K arcs.
pub(crate) fn flow_spec_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for n in [512usize, 2048] {
        add(&mut v, format!("cut-{n}"), "max_flow", false, move |s| {
            Input::new(cut(n, s))
        });
    }
    add(&mut v, "flow-rmf".into(), "max_flow", false, |s| {
        Input::new(genrmf(32, 64, 1, 10_000, s))
    });
    v
}
