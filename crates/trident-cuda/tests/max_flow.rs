//! MaxFlow on the GPU against the reference (Dinic) on many small inputs:
//! random 2-D and 3-D grids (about a third of terminal capacities zero),
//! all-zero grids, equal capacities everywhere (ties), grids cut into
//! disconnected parts, segmentation grids, capacities that need the `i64`
//! counters, random networks (parallel arcs, self-loops, arcs into s and out
//! of t) and RMF networks. Flow values and labels must be identical; network
//! arc flows must pass the reference's certificate. Skipped without CUDA.

mod common;

use trident_core::{FlowArc, FlowNetwork, GridGraph, MaxFlow, MaxFlowDevice};
use trident_cuda::Tuning;
use trident_reference::ReferenceBackend;
use trident_testkit::cases::{cut, genrmf, random_grid, random_network};

use common::{Rng, backend, seed};

fn pick(r: &mut Rng, n: usize) -> usize {
    r.below(n as u64) as usize
}

fn reference() -> ReferenceBackend {
    ReferenceBackend::new().expect("the reference backend is always available")
}

fn same_grid(be: &dyn MaxFlow, g: &GridGraph, what: &str) {
    let want = reference().grid_cut(g).expect("reference grid_cut");
    let got = be
        .grid_cut(g)
        .unwrap_or_else(|e| panic!("{what}: cuda failed: {e}"));
    assert_eq!(got.flow, want.flow, "{what}: flow value");
    let diff = (0..g.nodes())
        .filter(|&v| got.source_side[v] != want.source_side[v])
        .count();
    assert_eq!(
        diff, 0,
        "{what}: {diff} labels differ from the canonical cut"
    );
}

fn same_network(be: &dyn MaxFlow, g: &FlowNetwork, what: &str) {
    let want = reference().network_flow(g).expect("reference network_flow");
    let got = be
        .network_flow(g)
        .unwrap_or_else(|e| panic!("{what}: cuda failed: {e}"));
    assert_eq!(got.flow, want.flow, "{what}: flow value");
    assert_eq!(got.source_side, want.source_side, "{what}: canonical cut");
    if let Err(e) = trident_reference::certify::network_flow(g, &got) {
        panic!("{what}: certificate failed: {e}");
    }
}

/// Rebuilds a grid with every capacity mapped through `f`.
fn remap(g: &GridGraph, f: impl Fn(i64) -> i64) -> GridGraph {
    let (d, h, w) = g.shape();
    let src = g.source().iter().map(|&c| f(c)).collect();
    let snk = g.sink().iter().map(|&c| f(c)).collect();
    let caps = g.caps().iter().map(|&c| f(c)).collect();
    if g.is_3d() {
        GridGraph::new_3d(d, h, w, src, snk, caps)
    } else {
        GridGraph::new_2d(h, w, src, snk, caps)
    }
    .expect("remapped grid is valid")
}

#[test]
fn random_grids_match_the_reference() {
    let Some(be) = backend("max_flow::random_grids") else {
        return;
    };
    let s = seed("max_flow::random_grids");
    let mut r = Rng::new(s);
    for i in 0..300u64 {
        let three = i % 2 == 1;
        let d = 1 + pick(&mut r, 5);
        let h = 1 + pick(&mut r, if i % 10 == 0 { 40 } else { 9 });
        let w = 1 + pick(&mut r, if i % 10 == 0 { 40 } else { 9 });
        let max_cap = [1, 2, 5, 100][pick(&mut r, 4)] as i64;
        let g = random_grid(d, h, w, three, max_cap, s ^ i);
        same_grid(
            &be,
            &g,
            &format!("random grid #{i} {d}x{h}x{w} 3d={three} cap {max_cap}"),
        );
        if i % 3 == 0 {
            // Ties: every non-zero capacity equal.
            let t = remap(&g, |c| if c > 0 { 3 } else { 0 });
            same_grid(&be, &t, &format!("tie grid #{i}"));
        }
        if i % 5 == 0 {
            // Disconnected parts: every neighbour arc of every third node gone.
            let (dd, hh, ww) = g.shape();
            let n = g.nodes();
            let mut caps = g.caps().to_vec();
            for (k, c) in caps.iter_mut().enumerate() {
                let v = k % n;
                let dir = trident_core::Dir::ALL[k / n];
                let u = g.neighbor(v, dir).unwrap_or(v);
                if v.is_multiple_of(3) || u.is_multiple_of(3) {
                    *c = 0;
                }
            }
            let p = if g.is_3d() {
                GridGraph::new_3d(dd, hh, ww, g.source().to_vec(), g.sink().to_vec(), caps)
            } else {
                GridGraph::new_2d(hh, ww, g.source().to_vec(), g.sink().to_vec(), caps)
            }
            .expect("valid");
            same_grid(&be, &p, &format!("disconnected grid #{i}"));
        }
    }
}

#[test]
fn zero_and_wide_grids() {
    let Some(be) = backend("max_flow::zero_and_wide_grids") else {
        return;
    };
    let s = seed("max_flow::zero_and_wide_grids");
    let g = random_grid(3, 7, 5, true, 9, s);
    same_grid(&be, &remap(&g, |_| 0), "all-zero 3-D grid");
    let g2 = random_grid(1, 6, 11, false, 9, s + 1);
    same_grid(&be, &remap(&g2, |_| 0), "all-zero 2-D grid");
    // Sums beyond i32: the i64 kernels.
    same_grid(&be, &remap(&g, |c| c << 36), "i64 3-D grid");
    same_grid(&be, &remap(&g2, |c| c * 1_000_000_007), "i64 2-D grid");
    // Sums past i32 whose per-node bound fits: i32 counters on a grid
    // that i64 ones would have taken before.
    let big = remap(&random_grid(30, 30, 30, true, 100, s + 4), |c| c * 1_000);
    assert!(big.capacity_sum() > i32::MAX as i64);
    same_grid(&be, &big, "30^3 grid, sum past i32, nodes within it");
    // One node, one row, one column.
    let one = GridGraph::new_2d(1, 1, vec![4], vec![7], vec![0; 4]).expect("valid");
    same_grid(&be, &one, "1x1 grid");
    let row = random_grid(1, 1, 257, false, 5, s + 2);
    same_grid(&be, &row, "1x257 grid");
    let col = random_grid(1, 300, 1, false, 5, s + 3);
    same_grid(&be, &col, "300x1 grid");
}

/// Host calls compute the starting residuals on the host, inside the staged
/// upload (pieces of several MiB), in 16 bits when every capacity fits
/// (widened on the device), else in the counter width; the device-resident
/// path converts the uploaded `i64` grid with a kernel. Both reach the same
/// unique answer, with `i32` and `i64` counters.
#[test]
fn staged_host_grids_match_the_device_path() {
    let Some(be) = backend("max_flow::staged_host_grids") else {
        return;
    };
    let s = seed("max_flow::staged_host_grids");
    let g = cut(700, s);
    for (g, what) in [
        (g.clone(), "cut-700, i32 counters, 16-bit upload"),
        (
            remap(&g, |c| c * 1_000),
            "cut-700 x 1000, i32 counters and upload",
        ),
        (remap(&g, |c| c << 33), "cut-700, i64 counters"),
    ] {
        let host = be.grid_cut(&g).expect("host call");
        let dev = be.upload_grid(&g).expect("upload");
        let (flow, labels) = be.grid_cut_device(&dev).expect("device-resident cut");
        let labels = be.download_vec(&labels).expect("labels");
        assert_eq!(host.flow, flow, "{what}: flow value");
        let same = host
            .source_side
            .iter()
            .zip(&labels)
            .all(|(&a, &b)| a == (b != 0));
        assert!(same, "{what}: labels differ");
        assert!(host.source_side.iter().any(|&x| x) && !host.source_side.iter().all(|&x| x));
    }
}

#[test]
fn segmentation_grids_match_the_reference() {
    let Some(be) = backend("max_flow::segmentation") else {
        return;
    };
    let s = seed("max_flow::segmentation");
    for (n, k) in [(64, 0u32), (200, 0), (200, 1), (200, 7), (200, 500)] {
        let be = be.tuned(Tuning {
            flow_relabel_period: Some(k),
            ..Tuning::default()
        });
        same_grid(&be, &cut(n, s + n as u64), &format!("cut-{n} period {k}"));
    }
}

#[test]
fn random_networks_match_the_reference() {
    let Some(be) = backend("max_flow::random_networks") else {
        return;
    };
    let s = seed("max_flow::random_networks");
    let mut r = Rng::new(s);
    for i in 0..300u64 {
        let n = 2 + pick(&mut r, 30);
        let m = pick(&mut r, 120);
        let max_cap = [1, 3, 50][pick(&mut r, 3)] as i64;
        let g = random_network(n, m, max_cap, s ^ i);
        // Every other network with a global relabel after each iteration.
        let be = be.tuned(Tuning {
            network_relabel_period: Some(if i % 2 == 0 { 1 } else { 0 }),
            ..Tuning::default()
        });
        same_network(&be, &g, &format!("random network #{i} n {n} m {m}"));
        // The same arcs with s and t elsewhere (arcs into s, out of t).
        let (sv, tv) = (pick(&mut r, n) as u32, pick(&mut r, n) as u32);
        if sv != tv {
            let h = FlowNetwork::new(n, sv, tv, g.arcs().to_vec()).expect("valid");
            same_network(&be, &h, &format!("random network #{i} s {sv} t {tv}"));
        }
    }
    let wide: Vec<FlowArc> = random_network(12, 60, 9, s)
        .arcs()
        .iter()
        .map(|a| FlowArc {
            cap: a.cap << 40,
            ..*a
        })
        .collect();
    let g = FlowNetwork::new(12, 0, 11, wide).expect("valid");
    same_network(&be, &g, "i64 network");
    for (a, b) in [(4, 4), (8, 6), (12, 10)] {
        let g = genrmf(a, b, 1, 100, s + a as u64);
        same_network(&be, &g, &format!("rmf {a}x{b}"));
    }
}

/// A small launch budget makes the solve stop part-way and hand its state
/// to the host finisher: the answer must not change, whatever the budget,
/// through the host API and the device-resident one (which downloads the
/// capacities for the host). Budget 1 stops before the first launch.
#[test]
fn the_launch_budget_hands_over_to_the_host() {
    let Some(be) = backend("max_flow::budget") else {
        return;
    };
    let s = seed("max_flow::budget");
    let mut r = Rng::new(s);
    for budget in [1u64, 2, 5, 11, 30, 100, 400] {
        let be = be.tuned(Tuning {
            flow_budget: Some(budget),
            ..Tuning::default()
        });
        for i in 0..20u64 {
            let three = i % 2 == 1;
            let (d, h, w) = (
                1 + pick(&mut r, 4),
                1 + pick(&mut r, 12),
                1 + pick(&mut r, 12),
            );
            let g = random_grid(d, h, w, three, 20, s ^ i);
            same_grid(&be, &g, &format!("budget {budget}: grid #{i}"));
            let g = random_network(2 + pick(&mut r, 40), pick(&mut r, 200), 30, s ^ i);
            same_network(&be, &g, &format!("budget {budget}: network #{i}"));
        }
        let g = cut(64, s);
        same_grid(&be, &g, &format!("budget {budget}: cut-64"));
        let dev = be.upload_grid(&g).expect("upload");
        let (flow, labels) = be.grid_cut_device(&dev).expect("device-resident cut");
        let side: Vec<bool> = be
            .download_vec(&labels)
            .expect("labels")
            .iter()
            .map(|&b| b != 0)
            .collect();
        let want = reference().grid_cut(&g).expect("reference");
        assert_eq!(
            (flow, side),
            (want.flow, want.source_side),
            "budget {budget}: device-resident cut-64"
        );
        same_network(
            &be,
            &genrmf(8, 6, 1, 100, s),
            &format!("budget {budget}: rmf 8x6"),
        );
    }
}

/// Per-arc flows are not unique, so they show any dependence on the
/// schedule: the same network three times must give the same bits.
#[test]
fn network_flows_are_deterministic() {
    let Some(be) = backend("max_flow::deterministic") else {
        return;
    };
    let s = seed("max_flow::deterministic");
    for (what, g) in [
        ("random 1000 x 8000", random_network(1000, 8000, 50, s)),
        (
            "random 5000 x 40000",
            random_network(5000, 40_000, 50, s + 1),
        ),
        ("rmf 16 x 16", genrmf(16, 16, 1, 1000, s + 2)),
    ] {
        let first = be.network_flow(&g).expect("cuda network_flow");
        for run in 2..=3 {
            let again = be.network_flow(&g).expect("cuda network_flow");
            assert!(again == first, "{what}: run {run} differs from run 1");
        }
    }
}

/// Parallel push-relabel's worst case, flow along one long path: a thin
/// grid goes to the host from the start, a chain network past the level
/// cap of its first global relabel; both must answer (and quickly: the
/// budget bounds the device part).
#[test]
fn long_paths_finish() {
    let Some(be) = backend("max_flow::long_paths") else {
        return;
    };
    let s = seed("max_flow::long_paths");
    let g = trident_testkit::cases::path_grid(200_000, s);
    same_grid(&be, &g, "1 x 200,000 path grid");
    let dev = be.upload_grid(&g).expect("upload");
    let (flow, _labels) = be.grid_cut_device(&dev).expect("device-resident path");
    assert_eq!(flow, reference().grid_cut(&g).expect("reference").flow);
    let net = trident_testkit::cases::path_network(200_000, s);
    same_network(&be, &net, "200,000-node chain");
    // Deep but under the level cap: the device solves it within the budget
    // or hands over; either way the same answer.
    let g = trident_testkit::cases::path_grid(3000, s);
    same_grid(&be, &g, "1 x 3000 path grid");
}

/// Layers `i` of `parts` of `total` (the even split the sharded call uses).
fn even(total: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    total * i / parts..total * (i + 1) / parts
}

/// The grid cut into `parts` slabs of layers, each taken alone to a
/// preflow, the states placed side by side (all but the first packed and
/// unpacked, as they travel between GPUs) and completed on this GPU.
fn slab_cut(be: &trident_cuda::CudaBackend, g: &GridGraph, parts: usize) -> (i64, Vec<bool>) {
    let (d, h, _) = g.shape();
    let layers = if g.is_3d() { d } else { h };
    let slabs: Vec<_> = (0..parts)
        .map(|i| {
            be.upload_grid_layers(g, even(layers, parts, i))
                .expect("upload layers")
        })
        .collect();
    let states: Vec<_> = slabs
        .iter()
        .map(|s| be.grid_layers_preflow(s).expect("slab preflow"))
        .collect();
    let mut whole = be.grid_preflow_whole(&slabs[0]).expect("whole state");
    let layer = g.nodes() / layers;
    for (i, (s, p)) in slabs.iter().zip(&states).enumerate() {
        if i == 0 {
            be.place_preflow(&mut whole, p, s.layers().start)
                .expect("place slab");
        } else {
            // The others as they travel between GPUs.
            let packed = be.pack_preflow(p, 0..p.nodes()).expect("pack slab");
            let nodes = s.layers().start * layer..s.layers().end * layer;
            be.unpack_preflow(&mut whole, nodes, &packed)
                .expect("unpack slab");
        }
    }
    let (flow, labels) = be.grid_cut_preflow(whole).expect("complete the preflow");
    let side = be.download_vec(&labels).expect("labels");
    (flow, side.iter().map(|&b| b != 0).collect())
}

/// A grid cut into slabs of layers (planes of 3-D grids, rows of 2-D ones),
/// each slab taken alone to a maximum preflow and the states completed as
/// one: the reference's flow and canonical cut for any number of slabs
/// (empty ones too), both counter widths, every wire width (16-bit, 32, 64),
/// and launch budgets that stop the slabs or the whole solve early.
#[test]
fn slabs_completed_as_one_grid_match_the_reference() {
    let Some(be) = backend("max_flow::slabs") else {
        return;
    };
    let s = seed("max_flow::slabs");
    let mut r = Rng::new(s);
    let mut grids = vec![
        (cut(120, s), "cut-120".to_string()),
        (trident_testkit::cases::cut3d(24, s), "cut3d-24".to_string()),
    ];
    for i in 0..40u64 {
        let three = i % 2 == 1;
        let (d, h, w) = (
            1 + pick(&mut r, 7),
            1 + pick(&mut r, 14),
            1 + pick(&mut r, 14),
        );
        let g = random_grid(d, h, w, three, [1, 5, 100][i as usize % 3], s ^ i);
        grids.push((g, format!("random grid #{i} {d}x{h}x{w} 3d={three}")));
    }
    let wide = remap(&grids[1].0, |c| c << 34);
    grids.push((wide, "cut3d-24, i64 counters".into()));
    // i32 counters whose values pass u16: the state travels at full width.
    let mid = remap(&grids[1].0, |c| c * 1_000);
    grids.push((mid, "cut3d-24 x 1000, i32 counters past u16".into()));
    for (g, what) in &grids {
        let want = reference().grid_cut(g).expect("reference grid_cut");
        for parts in [1, 2, 3, 5] {
            let got = slab_cut(&be, g, parts);
            assert_eq!(got.0, want.flow, "{what}, {parts} slabs: flow value");
            assert!(
                got.1 == want.source_side,
                "{what}, {parts} slabs: labels differ from the canonical cut"
            );
        }
    }
    for budget in [1u64, 7, 60] {
        let be = be.tuned(Tuning {
            flow_budget: Some(budget),
            ..Tuning::default()
        });
        for (g, what) in grids.iter().step_by(5) {
            let want = reference().grid_cut(g).expect("reference grid_cut");
            let got = slab_cut(&be, g, 3);
            assert_eq!(
                (got.0, got.1 == want.source_side),
                (want.flow, true),
                "budget {budget}: {what}, 3 slabs"
            );
        }
    }
    let g = &grids[0].0;
    let e = be
        .upload_grid_layers(g, 100..121)
        .err()
        .expect("past the last row");
    assert!(e.to_string().contains("layers"), "{e}");
}
