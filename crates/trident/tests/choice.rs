//! The facade's per-call choice: the cost model's crossover
//! sends small calls to rayon and large ones to the GPU, `TRIDENT_BACKEND`
//! overrides it, a backend answering `Unsupported` hands the call on, and
//! `last_choice` / `report` say who served the last call and why. Fake
//! backends stand in for CUDA, so this runs on any machine.

use trident::{
    Backend, BackendKind, Coord, CostModel, CsrMatrix, DenseGemm, Dictionary, Error, FlowNetwork,
    GemmParams, GridCut, GridGraph, MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow,
    Pair, Point, Primitive, Primitives, RadiusNeighbors, Result, SparseCoder, SparseCodes,
    SparseGemm, StopRule, Trident,
};

/// A backend called `name` that serves SpGEMM and GEMM (doing nothing) unless
/// `refuses`, and answers `Unsupported` to everything else.
struct Fake {
    name: &'static str,
    refuses: bool,
}

impl Fake {
    fn ok(&self) -> Result<()> {
        if self.refuses {
            Err(Error::Unsupported(format!("{} refuses", self.name)))
        } else {
            Ok(())
        }
    }
    fn no<R>(&self) -> Result<R> {
        Err(Error::Unsupported("not in this fake".into()))
    }
}

impl Backend for Fake {
    fn name(&self) -> &'static str {
        self.name
    }
    fn describe(&self) -> String {
        format!("fake {}", self.name)
    }
}

macro_rules! fake_scalar {
    ($t:ty) => {
        impl DenseGemm<$t> for Fake {
            fn gemm(
                &self,
                _: &GemmParams<$t>,
                _: MatRef<'_, $t>,
                _: MatRef<'_, $t>,
                _: MatMut<'_, $t>,
            ) -> Result<()> {
                self.ok()
            }
        }
        impl SparseGemm<$t> for Fake {
            fn spgemm(&self, a: &CsrMatrix<$t>, b: &CsrMatrix<$t>) -> Result<CsrMatrix<$t>> {
                self.ok()?;
                CsrMatrix::zeros(a.rows(), b.cols())
            }
        }
        impl SparseCoder<$t> for Fake {
            fn encode(
                &self,
                _: &Dictionary<$t>,
                _: MatRef<'_, $t>,
                _: StopRule,
            ) -> Result<SparseCodes<$t>> {
                self.no()
            }
        }
    };
}
fake_scalar!(f32);
fake_scalar!(f64);

impl<T: Coord> NearestPairs<T> for Fake {
    fn nearest(&self, _: &[Point<T>], _: &[Point<T>], _: &mut [Neighbor<T>]) -> Result<()> {
        self.no()
    }
    fn knn(&self, _: &[Point<T>], _: &[Point<T>], _: usize, _: &mut [Neighbor<T>]) -> Result<()> {
        self.no()
    }
    fn closest_pairs(&self, _: &[Point<T>], _: &[Point<T>], _: usize) -> Result<Vec<Pair<T>>> {
        self.no()
    }
    fn within(&self, _: &[Point<T>], _: &[Point<T>], _: T, _: usize) -> Result<RadiusNeighbors<T>> {
        self.no()
    }
    fn self_pairs(&self, _: &[Point<T>], _: T, _: usize) -> Result<RadiusNeighbors<T>> {
        self.no()
    }
}

impl MaxFlow for Fake {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        self.ok()?;
        Ok(GridCut {
            flow: 0,
            source_side: vec![false; g.nodes()],
        })
    }
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        self.ok()?;
        Ok(NetworkFlow {
            flow: 0,
            source_side: vec![false; g.nodes()],
            arc_flow: vec![0; g.arcs().len()],
        })
    }
}

fn fakes(rayon_refuses: bool) -> Vec<Box<dyn Primitives>> {
    vec![
        Box::new(Fake {
            name: "cuda",
            refuses: false,
        }),
        Box::new(Fake {
            name: "rayon",
            refuses: rayon_refuses,
        }),
    ]
}

/// A diagonal `n x n` matrix: nnz = n.
fn diag(n: usize) -> CsrMatrix<f32> {
    let t: Vec<(u32, u32, f32)> = (0..n as u32).map(|i| (i, i, 1.0)).collect();
    CsrMatrix::from_triplets(n, n, &t).unwrap()
}

fn model() -> CostModel {
    // SpGEMM of two diagonals: work = 2n, so n < 50 goes to rayon.
    CostModel::preference_only().with_crossover(BackendKind::Cuda, Primitive::SparseGemm, 100.0)
}

#[test]
fn small_calls_go_to_rayon_and_large_ones_to_the_gpu() {
    let t = Trident::with_backends(fakes(false))
        .unwrap()
        .with_cost_model(model());
    assert!(t.last_choice().is_none());
    assert_eq!(t.served_last(), "cuda", "before any call: the primary");
    t.spgemm(&diag(10), &diag(10)).unwrap();
    assert_eq!(t.served_last(), "rayon");
    let c = t.last_choice().unwrap();
    assert_eq!(
        (c.primitive, c.backend, c.work),
        (Primitive::SparseGemm, "rayon", 20.0)
    );
    assert!(c.reason().contains("< cuda crossover"), "{}", c.reason());
    t.spgemm(&diag(60), &diag(60)).unwrap();
    let c = t.last_choice().unwrap();
    assert_eq!(c.backend, "cuda");
    assert!(c.reason().contains(">= cuda crossover"), "{}", c.reason());
    // A primitive without a crossover keeps the preference order.
    let one = [1.0f32];
    let mut out = [0.0f32];
    t.gemm(
        &GemmParams::default(),
        MatRef::dense(&one, 1, 1).unwrap(),
        MatRef::dense(&one, 1, 1).unwrap(),
        MatMut::dense(&mut out, 1, 1).unwrap(),
    )
    .unwrap();
    let c = t.last_choice().unwrap();
    assert_eq!((c.primitive, c.backend), (Primitive::DenseGemm, "cuda"));
    assert!(c.reason().contains("preference order"), "{}", c.reason());
    // The report says who served the last call and lists the model.
    let r = t.report();
    assert!(r.contains("last call: dense_gemm served by cuda"), "{r}");
    assert!(r.contains("sparse_gemm on cuda"), "{r}");
}

#[test]
fn unsupported_on_the_preferred_backend_falls_back() {
    let t = Trident::with_backends(fakes(true))
        .unwrap()
        .with_cost_model(model());
    t.spgemm(&diag(10), &diag(10)).unwrap();
    let c = t.last_choice().unwrap();
    assert_eq!((c.preferred, c.backend), ("rayon", "cuda"));
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].0, "rayon");
    assert!(
        c.reason().contains("rayon unsupported: rayon refuses"),
        "{}",
        c.reason()
    );
}

#[test]
fn unsupported_everywhere_is_an_unsupported_error() {
    let t = Trident::with_backends(fakes(false))
        .unwrap()
        .with_cost_model(model());
    let e = t.nearest(&[], &[], &mut [] as &mut [Neighbor]);
    assert!(matches!(e, Err(Error::Unsupported(_))), "{e:?}");
}

#[test]
fn the_environment_forces_one_backend() {
    let t = Trident::from_env_value(Some(std::ffi::OsStr::new("rayon"))).unwrap();
    t.spgemm(&diag(1000), &diag(1000)).unwrap();
    let c = t.last_choice().unwrap();
    assert_eq!(c.backend, "rayon");
    assert!(c.forced);
    assert_eq!(c.reason(), "forced by TRIDENT_BACKEND");
    assert!(t.report().contains("forced by TRIDENT_BACKEND"));
}

#[test]
fn the_default_model_has_crossovers_for_the_benchmarked_primitives() {
    let m = CostModel::default();
    for p in [
        Primitive::DenseGemm,
        Primitive::SparseGemm,
        Primitive::NearestPairs,
        Primitive::MaxFlow,
    ] {
        let w = m.crossover(BackendKind::Cuda, p).unwrap();
        assert!(w > 0.0);
        // The crossovers are CUDA's: another GPU backend has none until set.
        assert_eq!(m.crossover(BackendKind::Wgpu, p), None);
        assert_eq!(m.first(p, w / 2.0, &["wgpu", "rayon"]), 0);
        assert_eq!(m.first(p, w / 2.0, &["cuda", "rayon"]), 1);
        assert_eq!(m.first(p, w * 2.0, &["cuda", "rayon"]), 0);
        // Without rayon in the chain there is nothing to prefer.
        assert_eq!(m.first(p, w / 2.0, &["cuda", "reference"]), 0);
    }
    // A crossover may say CUDA never wins.
    let never = m.with_crossover(BackendKind::Cuda, Primitive::MaxFlow, f64::INFINITY);
    assert_eq!(never.first(Primitive::MaxFlow, 1e12, &["cuda", "rayon"]), 1);
    assert!(
        never
            .describe()
            .contains("max_flow always (never faster on cuda)")
    );
    // Batch-OMP keeps the preference order (CUDA won every size).
    let m = CostModel::default();
    let c = trident::Choice {
        primitive: Primitive::MaxFlow,
        backend: "rayon",
        work: 4.2e6,
        preferred: "rayon",
        crossover: Some(("cuda", f64::INFINITY)),
        forced: false,
        skipped: Vec::new(),
    };
    assert_eq!(c.reason(), "cuda is never faster for max_flow (measured)");
    assert_eq!(m.crossover(BackendKind::Cuda, Primitive::SparseCoder), None);
    assert_eq!(m.first(Primitive::SparseCoder, 1.0, &["cuda", "rayon"]), 0);
    assert_eq!(
        CostModel::preference_only().first(Primitive::DenseGemm, 1.0, &["cuda", "rayon"]),
        0
    );
}

#[test]
fn a_new_gpu_backend_gets_crossovers_by_its_kind() {
    let m =
        CostModel::preference_only().with_crossover(BackendKind::Wgpu, Primitive::DenseGemm, 1e6);
    assert_eq!(
        m.crossover(BackendKind::Wgpu, Primitive::DenseGemm),
        Some(1e6)
    );
    assert_eq!(m.crossover(BackendKind::Cuda, Primitive::DenseGemm), None);
    assert_eq!(m.first(Primitive::DenseGemm, 1e3, &["wgpu", "rayon"]), 1);
    assert_eq!(m.first(Primitive::DenseGemm, 1e9, &["wgpu", "rayon"]), 0);
    // Only the head of the chain's crossover counts.
    assert_eq!(
        m.first(Primitive::DenseGemm, 1e3, &["cuda", "wgpu", "rayon"]),
        0
    );
    // Setting it again replaces it.
    let m = m.with_crossover(BackendKind::Wgpu, Primitive::DenseGemm, 10.0);
    assert_eq!(m.first(Primitive::DenseGemm, 1e3, &["wgpu", "rayon"]), 0);
    assert!(m.describe().contains("dense_gemm on wgpu from m*n*k"));
}

#[test]
fn debug_is_short_and_names_the_backends() {
    let t = Trident::with_backends(fakes(false))
        .unwrap()
        .with_cost_model(model());
    let before = format!("{t:?}");
    assert!(
        before.contains(r#"backends: ["cuda", "rayon"]"#),
        "{before}"
    );
    assert!(before.contains("served_last: None"), "{before}");
    t.spgemm(&diag(10), &diag(10)).unwrap();
    let after = format!("{t:?}");
    assert!(after.contains(r#"served_last: Some("rayon")"#), "{after}");
    assert!(after.len() < 200, "{after}");
}

/// Under the default model large grids go to the GPU, small ones and every
/// network (counted as no work) to rayon.
#[test]
fn grids_go_by_size_and_networks_to_rayon() {
    let t = Trident::with_backends(fakes(false))
        .unwrap()
        .with_cost_model(CostModel::default());
    let grid = |side: usize| {
        let n = side * side;
        GridGraph::new_2d(side, side, vec![1; n], vec![1; n], vec![0; 4 * n]).unwrap()
    };
    t.grid_cut(&grid(64)).unwrap();
    assert_eq!(t.served_last(), "rayon");
    t.grid_cut(&grid(1024)).unwrap();
    assert_eq!(t.served_last(), "cuda");
    let arcs = vec![trident_core::FlowArc {
        from: 0,
        to: 1,
        cap: 5,
    }];
    let net = FlowNetwork::new(2_000_000, 0, 1, arcs).unwrap();
    t.network_flow(&net).unwrap();
    let c = t.last_choice().unwrap();
    assert_eq!(
        (c.primitive, c.backend, c.work),
        (Primitive::MaxFlow, "rayon", 0.0)
    );
}
