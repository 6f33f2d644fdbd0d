//! The MaxFlow conformance suite and its bad-input group (see
//! [`crate::conformance`] for what every suite runs).

use crate::cases::{self, *};
use crate::conformance::*;
use proptest::prelude::*;
use trident_core::*;

/// The MaxFlow suite (2-D and 3-D grids, general networks).
pub fn max_flow(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("max_flow", b);
    let k = || -> Result<bool> {
        let g = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0])?;
        let cut = b.grid_cut(&g)?;
        let n = FlowNetwork::new(
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
        )?;
        let f = b.network_flow(&n)?;
        Ok(cut.flow == 3
            && cut.source_side == [true, false]
            && f.flow == 1
            && f.arc_flow == [1, 1]
            && f.source_side == [true, true, false])
    };
    known(&mut r, "1 x 2 grid and a 3-node path", k());
    run_catalog(&mut r, b, "max_flow");
    run_determinism(&mut r, b, "max_flow");
    // That is a grid, whose answer (value and cut) is unique whatever the
    // schedule. Per-arc flows are not: run the random networks too, a few
    // times, where a schedule-dependent device solve would show.
    for case in cases::cases("max_flow", Size::Small) {
        if case.name.starts_with("flow-random-") {
            run_determinism_case(&mut r, b, "max_flow", &case, 3);
        }
    }
    let strategy = (
        (0usize..7, 0usize..7, 1usize..4, any::<bool>()),
        (
            0i64..20,
            2usize..25,
            0usize..80,
            any::<bool>(),
            any::<u64>(),
        ),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((h, w, d, three), (cap, nodes, arcs, grid, seed))| {
            if grid {
                Input::Grid(cases::random_grid(d, h, w, three, cap, seed))
            } else {
                Input::Network(cases::random_network(nodes, arcs, cap, seed))
            }
        },
    );
    r
}

// -------------------------------------------------------------- bad input

/// Bad input for MaxFlow: the grid and network constructors (negative
/// capacities, s == t, border arcs, lengths, overflow) and DIMACS parsing.
/// The trait methods take only valid-by-construction graphs; a backend is run
/// on the valid neighbours of these inputs to show they are accepted.
pub fn bad_input_max_flow(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_max_flow", b);
    let z = |n: usize| vec![0i64; n];
    expect_err(
        &mut r,
        "grid negative source",
        GridGraph::new_2d(1, 2, vec![1, -1], z(2), z(8)),
        "NegativeCapacity{source}",
        negative("source"),
    );
    expect_err(
        &mut r,
        "grid negative sink",
        GridGraph::new_2d(1, 2, z(2), vec![-5, 0], z(8)),
        "NegativeCapacity{sink}",
        negative("sink"),
    );
    expect_err(
        &mut r,
        "grid negative arc",
        GridGraph::new_2d(1, 2, z(2), z(2), vec![-1, 0, 0, 0, 0, 0, 0, 0]),
        "NegativeCapacity{caps}",
        negative("caps"),
    );
    expect_err(
        &mut r,
        "grid arc off the border",
        GridGraph::new_2d(1, 2, z(2), z(2), vec![0, 3, 0, 0, 0, 0, 0, 0]),
        "InvalidArgument{caps}",
        arg("caps"),
    );
    expect_err(
        &mut r,
        "grid caps length",
        GridGraph::new_2d(1, 2, z(2), z(2), z(6)),
        "DimensionMismatch{caps}",
        dim("caps"),
    );
    expect_err(
        &mut r,
        "grid source length",
        GridGraph::new_2d(2, 2, z(3), z(4), z(16)),
        "DimensionMismatch{source}",
        dim("source"),
    );
    expect_err(
        &mut r,
        "3-D grid caps length",
        GridGraph::new_3d(2, 1, 1, z(2), z(2), z(8)),
        "DimensionMismatch{caps}",
        dim("caps"),
    );
    expect_err(
        &mut r,
        "grid capacity sum overflows i64",
        GridGraph::new_2d(1, 2, vec![i64::MAX, 1], z(2), z(8)),
        "TooLarge",
        |e| matches!(e, Error::TooLarge { .. }),
    );
    let arcs = |v: &[(u32, u32, i64)]| {
        v.iter()
            .map(|&(from, to, cap)| FlowArc { from, to, cap })
            .collect::<Vec<_>>()
    };
    expect_err(
        &mut r,
        "network s == t",
        FlowNetwork::new(3, 1, 1, arcs(&[(0, 1, 1)])),
        "InvalidArgument{sink}",
        arg("sink"),
    );
    expect_err(
        &mut r,
        "network negative capacity",
        FlowNetwork::new(3, 0, 2, arcs(&[(0, 1, 1), (1, 2, -4)])),
        "NegativeCapacity{arcs.cap}",
        negative("arcs.cap"),
    );
    expect_err(
        &mut r,
        "network endpoint out of range",
        FlowNetwork::new(3, 0, 2, arcs(&[(0, 3, 1)])),
        "InvalidArgument{arcs}",
        arg("arcs"),
    );
    expect_err(
        &mut r,
        "network s out of range",
        FlowNetwork::new(3, 5, 2, vec![]),
        "InvalidArgument{source}",
        arg("source"),
    );
    expect_err(
        &mut r,
        "DIMACS missing p line",
        FlowNetwork::read_dimacs("n 1 s\n".as_bytes()),
        "Parse",
        |e| matches!(e, Error::Parse { .. }),
    );
    expect_err(
        &mut r,
        "DIMACS arc count",
        FlowNetwork::read_dimacs("p max 2 2\nn 1 s\nn 2 t\na 1 2 3\n".as_bytes()),
        "Parse",
        |e| matches!(e, Error::Parse { .. }),
    );
    // The zero-capacity neighbours of those inputs are valid and solvable.
    let ok = (|| -> Result<bool> {
        let g = GridGraph::new_2d(1, 2, vec![1, 0], z(2), z(8))?;
        let n = FlowNetwork::new(3, 0, 2, arcs(&[(0, 1, 1), (1, 2, 0)]))?;
        Ok(b.grid_cut(&g)?.flow == 0 && b.network_flow(&n)?.flow == 0)
    })();
    known(&mut r, "zero-capacity neighbours of the bad inputs", ok);
    r
}
