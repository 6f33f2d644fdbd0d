//! The GPU backends' host finisher (`trident_core::flow::finish`) against the
//! reference: from the starting state of a GPU solve and from random partial
//! preflows, on small grids and networks, it must give the reference's flow
//! value and canonical cut, and for networks a feasible flow.

use trident_core::flow::finish;
use trident_core::{Dir, Error, FlowArc, FlowNetwork, GridGraph, MaxFlow};
use trident_reference::{ReferenceBackend, certify};

/// A small deterministic generator (xorshift), enough for test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_grid(r: &mut Rng, three_d: bool) -> GridGraph {
    let (d, h, w) = if three_d {
        (
            1 + r.below(3) as usize,
            1 + r.below(4) as usize,
            1 + r.below(5) as usize,
        )
    } else {
        (1, 1 + r.below(6) as usize, 1 + r.below(7) as usize)
    };
    let n = d * h * w;
    let dirs = if three_d { 6 } else { 4 };
    let term = |r: &mut Rng| {
        if r.below(3) == 0 {
            0
        } else {
            r.below(20) as i64
        }
    };
    let source: Vec<i64> = (0..n).map(|_| term(r)).collect();
    let sink: Vec<i64> = (0..n).map(|_| term(r)).collect();
    let shape = if three_d {
        GridGraph::new_3d(d, h, w, vec![0; n], vec![0; n], vec![0; 6 * n])
    } else {
        GridGraph::new_2d(h, w, vec![0; n], vec![0; n], vec![0; 4 * n])
    }
    .unwrap();
    let caps = (0..dirs * n)
        .map(|i| {
            if shape.neighbor(i % n, Dir::ALL[i / n]).is_some() {
                r.below(15) as i64
            } else {
                0
            }
        })
        .collect();
    if three_d {
        GridGraph::new_3d(d, h, w, source, sink, caps)
    } else {
        GridGraph::new_2d(h, w, source, sink, caps)
    }
    .unwrap()
}

/// The state a GPU solve starts from: `min(source, sink)` of each node sent
/// straight through, the rest of the source capacity as excess.
fn grid_start(g: &GridGraph) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let through = |v: usize| g.source()[v].min(g.sink()[v]);
    let n = g.nodes();
    (
        g.caps().to_vec(),
        (0..n).map(|v| g.sink()[v] - through(v)).collect(),
        (0..n).map(|v| g.source()[v] - through(v)).collect(),
    )
}

/// Random pushes from nodes with excess, to neighbours or to the sink: still
/// a preflow, as a device leaves it mid-solve.
fn grid_scramble(g: &GridGraph, r: &mut Rng, st: &mut (Vec<i64>, Vec<i64>, Vec<i64>)) {
    let n = g.nodes();
    let (res, rt, ex) = st;
    for _ in 0..4 * n {
        let v = r.below(n as u64) as usize;
        if ex[v] == 0 {
            continue;
        }
        let k = r.below(g.dirs().len() as u64 + 1) as usize;
        if k == g.dirs().len() {
            let d = ex[v].min(rt[v]);
            rt[v] -= d;
            ex[v] -= d;
            continue;
        }
        let Some(u) = g.neighbor(v, Dir::ALL[k]) else {
            continue;
        };
        let a = k * n + v;
        let d = ex[v].min(res[a]);
        if d > 0 {
            let d = 1 + r.below(d as u64) as i64;
            res[a] -= d;
            res[(k ^ 1) * n + u] += d;
            ex[v] -= d;
            ex[u] += d;
        }
    }
}

#[test]
fn grids_match_the_reference() {
    let reference = ReferenceBackend::new().unwrap();
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..300 {
        let g = random_grid(&mut r, i % 3 == 0);
        let want = reference.grid_cut(&g).unwrap();
        let mut st = grid_start(&g);
        if i % 2 == 1 {
            grid_scramble(&g, &mut r, &mut st);
        }
        let again = st.clone();
        let got = finish::grid_cut(&g, st.0, st.1, st.2).unwrap();
        assert_eq!(got, want, "grid {i}: {:?}", g.shape());
        let twice = finish::grid_cut(&g, again.0, again.1, again.2).unwrap();
        assert_eq!(got, twice, "grid {i}: not deterministic");
    }
}

/// The shape that stalls GPU push-relabel: a 1 x 200,000 path.
#[test]
fn a_long_path_grid_is_linear_work() {
    let n = 200_000;
    let mut r = Rng(7);
    let mut caps = vec![0i64; 4 * n];
    for v in 0..n - 1 {
        caps[v] = 3 + r.below(7) as i64;
        caps[n + v + 1] = r.below(10) as i64;
    }
    let mut source = vec![0i64; n];
    let mut sink = vec![0i64; n];
    source[0] = 9;
    sink[n - 1] = 9;
    let g = GridGraph::new_2d(1, n, source, sink, caps).unwrap();
    let want = ReferenceBackend::new().unwrap().grid_cut(&g).unwrap();
    assert!(finish::grid_is_thin(1, 1, n));
    assert_eq!(finish::grid_cut_from_start(&g).unwrap(), want);
}

#[test]
fn thin_grids_are_those_with_a_side_deeper_than_the_level_cap() {
    assert_eq!(finish::max_levels(0), 4096);
    assert_eq!(finish::max_levels(2048 * 2048), 8192);
    assert!(!finish::grid_is_thin(1, 2048, 2048));
    assert!(!finish::grid_is_thin(256, 256, 256));
    assert!(!finish::grid_is_thin(1, 1, 4096));
    assert!(finish::grid_is_thin(1, 1, 4097));
    assert!(finish::grid_is_thin(1, 16, 100_000));
}

fn random_network(r: &mut Rng) -> FlowNetwork {
    let n = 2 + r.below(12) as u32;
    let m = r.below(50) as usize;
    let arcs = (0..m)
        .map(|_| FlowArc {
            from: r.below(n as u64) as u32,
            to: r.below(n as u64) as u32,
            cap: r.below(20) as i64,
        })
        .collect();
    let s = r.below(n as u64) as u32;
    let t = (s + 1 + r.below(n as u64 - 1) as u32) % n;
    FlowNetwork::new(n as usize, s, t, arcs).unwrap()
}

/// A random preflow: flow pushed along arcs from nodes with excess (the
/// source's arcs saturated first), never out of t.
fn network_preflow(g: &FlowNetwork, r: &mut Rng) -> Vec<i64> {
    let (s, t) = (g.source(), g.sink());
    let mut flow: Vec<i64> = g
        .arcs()
        .iter()
        .map(|a| if a.from == s && a.to != s { a.cap } else { 0 })
        .collect();
    let mut ex = vec![0i64; g.nodes()];
    for (a, &f) in g.arcs().iter().zip(&flow) {
        ex[a.to as usize] += f;
    }
    for _ in 0..4 * g.arcs().len() {
        let i = r.below(g.arcs().len().max(1) as u64) as usize;
        let Some(a) = g.arcs().get(i) else { break };
        let v = a.from as usize;
        if a.from == s || a.from == t || a.from == a.to {
            continue;
        }
        let d = ex[v].min(a.cap - flow[i]);
        if d > 0 {
            let d = 1 + r.below(d as u64) as i64;
            flow[i] += d;
            ex[v] -= d;
            ex[a.to as usize] += d;
        }
    }
    flow
}

#[test]
fn networks_match_the_reference() {
    let reference = ReferenceBackend::new().unwrap();
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for i in 0..400 {
        let g = random_network(&mut r);
        let want = reference.network_flow(&g).unwrap();
        let flow = if i % 2 == 0 {
            vec![0; g.arcs().len()]
        } else {
            network_preflow(&g, &mut r)
        };
        let got = finish::network_flow(&g, flow.clone()).unwrap();
        assert_eq!(
            (got.flow, &got.source_side),
            (want.flow, &want.source_side),
            "network {i}: {g:?}"
        );
        certify::network_flow(&g, &got).unwrap_or_else(|e| panic!("network {i}: {e}"));
        assert_eq!(finish::network_flow(&g, flow).unwrap(), got, "network {i}");
    }
}

/// A chain network of 200,000 nodes, excess stranded behind a bottleneck.
#[test]
fn a_long_chain_network_is_linear_work() {
    let n = 200_000u32;
    let mut r = Rng(11);
    let arcs: Vec<FlowArc> = (0..n - 1)
        .map(|v| FlowArc {
            from: v,
            to: v + 1,
            cap: 3 + r.below(1000) as i64,
        })
        .collect();
    let g = FlowNetwork::new(n as usize, 0, n - 1, arcs).unwrap();
    let want = ReferenceBackend::new().unwrap().network_flow(&g).unwrap();
    let got = finish::network_flow(&g, vec![0; g.arcs().len()]).unwrap();
    assert_eq!((got.flow, &got.source_side), (want.flow, &want.source_side));
    certify::network_flow(&g, &got).unwrap();
}

#[test]
fn a_state_that_is_not_a_preflow_is_a_backend_error() {
    let g = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let (res, rt, mut ex) = grid_start(&g);
    ex[1] = 1; // excess from nowhere
    let e = finish::grid_cut(&g, res, rt, ex).unwrap_err();
    assert!(matches!(e, Error::Backend(_)), "{e:?}");
    let net = FlowNetwork::new(
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
    for bad in [vec![0, 1], vec![3, 0], vec![0, 0, 0]] {
        let e = finish::network_flow(&net, bad).unwrap_err();
        assert!(matches!(e, Error::Backend(_)), "{e:?}");
    }
}

/// The sums and maxima a grid keeps from its construction are those of its
/// arrays.
#[test]
fn grids_keep_their_capacity_sums() {
    let mut r = Rng(0x51f1_5eed);
    for i in 0..50 {
        let g = random_grid(&mut r, i % 2 == 0);
        let sink: i64 = g.sink().iter().sum();
        let all: i64 = [g.source(), g.sink(), g.caps()]
            .iter()
            .flat_map(|a| a.iter())
            .sum();
        assert_eq!((g.sink_sum(), g.capacity_sum()), (sink, all), "grid {i}");
        let max = |a: &[i64]| a.iter().copied().max().unwrap_or(0);
        let maxima = [max(g.source()), max(g.sink()), max(g.caps())];
        assert_eq!(g.max_capacities(), maxima, "grid {i}");
    }
}
