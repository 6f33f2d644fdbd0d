//! The MaxFlow checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::check::*;
use trident_core::*;

fn labels(v: &mut Verdict, got: &[bool], exp: &[bool]) {
    if got.len() != exp.len() {
        v.fail(format!("{} labels for {} nodes", got.len(), exp.len()));
        return;
    }
    let diff: Vec<usize> = (0..got.len()).filter(|&i| got[i] != exp[i]).collect();
    if let Some(&first) = diff.first() {
        v.fail(format!(
            "{} labels differ from the canonical cut, first node {first} (got {}, reference {})",
            diff.len(),
            got[first],
            exp[first]
        ));
    }
}

/// Checks a grid cut: equal flow, identical labels, cut capacity == flow.
pub fn grid_cut(g: &GridGraph, expected: &GridCut, got: &GridCut) -> Verdict {
    let mut v = Verdict::default();
    if got.flow != expected.flow {
        v.fail(format!("flow {} vs reference {}", got.flow, expected.flow));
    }
    labels(&mut v, &got.source_side, &expected.source_side);
    if got.source_side.len() == g.nodes() {
        let cap = g.cut_capacity(&got.source_side);
        if cap != got.flow {
            v.fail(format!(
                "the returned cut has capacity {cap} but the flow is {}",
                got.flow
            ));
        }
    }
    if !v.passed() {
        v.ratio = f64::INFINITY;
    }
    v
}

/// Checks a network flow: equal flow, identical labels, cut capacity == flow,
/// per-arc flows within capacity, conserved, and summing to the flow at s.
pub fn network_flow(g: &FlowNetwork, expected: &NetworkFlow, got: &NetworkFlow) -> Verdict {
    let mut v = Verdict::default();
    if got.flow != expected.flow {
        v.fail(format!("flow {} vs reference {}", got.flow, expected.flow));
    }
    labels(&mut v, &got.source_side, &expected.source_side);
    if got.source_side.len() == g.nodes() {
        let cap = g.cut_capacity(&got.source_side);
        if cap != got.flow {
            v.fail(format!(
                "the returned cut has capacity {cap} but the flow is {}",
                got.flow
            ));
        }
    }
    if got.arc_flow.len() != g.arcs().len() {
        v.fail(format!(
            "{} arc flows for {} arcs",
            got.arc_flow.len(),
            g.arcs().len()
        ));
    } else {
        let mut net = vec![0i128; g.nodes()];
        for (i, (a, &f)) in g.arcs().iter().zip(&got.arc_flow).enumerate() {
            if f < 0 || f > a.cap {
                v.fail(format!(
                    "arc {i} ({} -> {}) carries {f}, capacity {}",
                    a.from, a.to, a.cap
                ));
            }
            net[a.from as usize] -= f as i128;
            net[a.to as usize] += f as i128;
        }
        let (s, t) = (g.source() as usize, g.sink() as usize);
        if let Some(u) = (0..g.nodes()).find(|&u| u != s && u != t && net[u] != 0) {
            v.fail(format!(
                "flow not conserved at node {u} (excess {})",
                net[u]
            ));
        }
        if -net[s] != got.flow as i128 {
            v.fail(format!(
                "net flow out of s is {} but the reported flow is {}",
                -net[s], got.flow
            ));
        }
    }
    if !v.passed() {
        v.ratio = f64::INFINITY;
    }
    v
}
