//! MaxFlow on wgpu past its work budget and on long paths: a small dispatch
//! budget makes a solve hand its state to the host finisher part-way, which
//! must not change the flow value or the canonical cut (and must leave a
//! feasible network flow); the same network run again gives the same bits.
//! Skipped without an adapter (llvmpipe counts as one).

use trident_core::{DeviceMemory, FlowNetwork, GridCut, GridGraph, MaxFlow, MaxFlowDevice};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::{cut, genrmf, path_grid, path_network, random_grid, random_network};
use trident_wgpu::{Tuning, WgpuBackend};

fn backend() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => Some(b),
        Err(e) => {
            println!("SKIPPED: {e}");
            None
        }
    }
}

fn same_grid(be: &WgpuBackend, g: &GridGraph, what: &str) {
    let want = ReferenceBackend::new().unwrap().grid_cut(g).unwrap();
    let got = be
        .grid_cut(g)
        .unwrap_or_else(|e| panic!("{what}: wgpu failed: {e}"));
    assert_eq!(got, want, "{what}");
}

fn same_network(be: &WgpuBackend, g: &FlowNetwork, what: &str) {
    let want = ReferenceBackend::new().unwrap().network_flow(g).unwrap();
    let got = be
        .network_flow(g)
        .unwrap_or_else(|e| panic!("{what}: wgpu failed: {e}"));
    assert_eq!(
        (got.flow, &got.source_side),
        (want.flow, &want.source_side),
        "{what}"
    );
    if let Err(e) = trident_reference::certify::network_flow(g, &got) {
        panic!("{what}: certificate failed: {e}");
    }
}

#[test]
fn the_dispatch_budget_hands_over_to_the_host() {
    let Some(be) = backend() else { return };
    for budget in [1u64, 3, 8, 25, 90] {
        let be = be.tuned(Tuning {
            flow_budget: Some(budget),
            ..Tuning::default()
        });
        for i in 0..6u64 {
            let (h, w) = (1 + (i as usize * 7) % 20, 2 + (i as usize * 5) % 19);
            let g = random_grid(2, h, w, i % 2 == 1, 20, 31 * i + budget);
            same_grid(&be, &g, &format!("budget {budget}: grid #{i}"));
            let g = random_network(10 + 7 * i as usize, 60 * i as usize, 30, 17 * i + budget);
            same_network(&be, &g, &format!("budget {budget}: network #{i}"));
        }
        same_grid(&be, &cut(40, budget), &format!("budget {budget}: cut-40"));
        same_network(
            &be,
            &genrmf(6, 5, 1, 100, budget),
            &format!("budget {budget}: rmf"),
        );
    }
}

#[test]
fn network_flows_are_deterministic() {
    let Some(be) = backend() else { return };
    for (what, g) in [
        ("random 1000 x 8000", random_network(1000, 8000, 50, 1)),
        ("rmf 8 x 8", genrmf(8, 8, 1, 1000, 2)),
    ] {
        let first = be.network_flow(&g).unwrap();
        for run in 2..=3 {
            assert!(
                be.network_flow(&g).unwrap() == first,
                "{what}: run {run} differs"
            );
        }
    }
}

#[test]
fn long_paths_finish() {
    let Some(be) = backend() else { return };
    same_grid(&be, &path_grid(200_000, 5), "1 x 200,000 path grid");
    same_grid(&be, &path_grid(3000, 6), "1 x 3000 path grid");
    same_network(&be, &path_network(5000, 7), "5,000-node chain");
}

/// The device-resident cut ([`MaxFlowDevice`]) gives what the host call
/// gives, on the device path, past the budget (the finisher then downloads
/// the uploaded grid), on a thin grid (host from the start) and on an empty
/// one; the upload is left as it was, so a second cut of it agrees too.
#[test]
fn device_resident_grid_cut_matches_the_host_call() {
    let Some(be) = backend() else { return };
    let grids = [
        cut(24, 5),
        random_grid(3, 5, 7, true, 20, 9),
        path_grid(3000, 4),
        GridGraph::new_2d(0, 0, vec![], vec![], vec![]).unwrap(),
    ];
    for budget in [0u64, 3] {
        let be = be.tuned(Tuning {
            flow_budget: Some(budget),
            ..Tuning::default()
        });
        for (i, g) in grids.iter().enumerate() {
            let want = be.grid_cut(g).unwrap();
            let dev = be.upload_grid(g).unwrap();
            for round in 0..2 {
                let (flow, labels) = be.grid_cut_device(&dev).unwrap();
                let mut side = vec![0u8; be.buffer_len(&labels)];
                be.download(&labels, &mut side).unwrap();
                let got = GridCut {
                    flow,
                    source_side: side.iter().map(|&b| b != 0).collect(),
                };
                assert_eq!(got, want, "budget {budget}, grid #{i}, round {round}");
            }
        }
    }
}
