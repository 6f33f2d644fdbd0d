//! The facade: its report says what serves each primitive (it used to say
//! "using wgpu" while rayon served every call), and its environment variable
//! is an error when unreadable (a non-UTF-8 value used to be ignored).

use trident::{
    Backend, CsrMatrix, DenseGemm, Dictionary, Error, FlowNetwork, GemmParams, GridCut, GridGraph,
    MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow, Pair, Point, RadiusNeighbors,
    ReferenceBackend, Result, SparseCoder, SparseCodes, SparseGemm, StopRule, Trident,
};

/// A backend that is available but serves no GEMM and no f64 at all, like a
/// wgpu backend on a software adapter: everything else is the reference's.
struct Partial;

impl Backend for Partial {
    fn name(&self) -> &'static str {
        "partial"
    }
    fn describe(&self) -> String {
        "partial (test)".into()
    }
}

impl DenseGemm<f32> for Partial {
    fn gemm(
        &self,
        _: &GemmParams<f32>,
        _: MatRef<'_, f32>,
        _: MatRef<'_, f32>,
        _: MatMut<'_, f32>,
    ) -> Result<()> {
        Err(Error::Unsupported("no gemm here".into()))
    }
}
impl DenseGemm<f64> for Partial {
    fn gemm(
        &self,
        _: &GemmParams<f64>,
        _: MatRef<'_, f64>,
        _: MatRef<'_, f64>,
        _: MatMut<'_, f64>,
    ) -> Result<()> {
        Err(Error::Unsupported("no f64 here".into()))
    }
}
impl SparseGemm<f32> for Partial {
    fn spgemm(&self, a: &CsrMatrix<f32>, b: &CsrMatrix<f32>) -> Result<CsrMatrix<f32>> {
        ReferenceBackend.spgemm(a, b)
    }
}
impl SparseGemm<f64> for Partial {
    fn spgemm(&self, _: &CsrMatrix<f64>, _: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>> {
        Err(Error::Unsupported("no f64 here".into()))
    }
}
impl SparseCoder<f32> for Partial {
    fn encode(
        &self,
        d: &Dictionary<f32>,
        x: MatRef<'_, f32>,
        r: StopRule,
    ) -> Result<SparseCodes<f32>> {
        ReferenceBackend.encode(d, x, r)
    }
}
impl SparseCoder<f64> for Partial {
    fn encode(
        &self,
        _: &Dictionary<f64>,
        _: MatRef<'_, f64>,
        _: StopRule,
    ) -> Result<SparseCodes<f64>> {
        Err(Error::Unsupported("no f64 here".into()))
    }
}
impl NearestPairs for Partial {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        ReferenceBackend.nearest(a, b, out)
    }
    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        ReferenceBackend.knn(a, b, k, out)
    }
    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        ReferenceBackend.closest_pairs(a, b, k)
    }
    fn within(&self, a: &[Point], b: &[Point], r: f32, max: usize) -> Result<RadiusNeighbors> {
        ReferenceBackend.within(a, b, r, max)
    }
    fn self_pairs(&self, p: &[Point], r: f32, max: usize) -> Result<RadiusNeighbors> {
        ReferenceBackend.self_pairs(p, r, max)
    }
}
impl NearestPairs<f64> for Partial {
    fn nearest(&self, _: &[Point<f64>], _: &[Point<f64>], _: &mut [Neighbor<f64>]) -> Result<()> {
        Err(Error::Unsupported("no f64 here".into()))
    }
    fn knn(
        &self,
        _: &[Point<f64>],
        _: &[Point<f64>],
        _: usize,
        _: &mut [Neighbor<f64>],
    ) -> Result<()> {
        Err(Error::Unsupported("no f64 here".into()))
    }
    fn closest_pairs(
        &self,
        _: &[Point<f64>],
        _: &[Point<f64>],
        _: usize,
    ) -> Result<Vec<Pair<f64>>> {
        Err(Error::Unsupported("no f64 here".into()))
    }
    fn within(
        &self,
        _: &[Point<f64>],
        _: &[Point<f64>],
        _: f64,
        _: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        Err(Error::Unsupported("no f64 here".into()))
    }
    fn self_pairs(&self, _: &[Point<f64>], _: f64, _: usize) -> Result<RadiusNeighbors<f64>> {
        Err(Error::Unsupported("no f64 here".into()))
    }
}
impl MaxFlow for Partial {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        ReferenceBackend.grid_cut(g)
    }
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        ReferenceBackend.network_flow(g)
    }
}

#[test]
fn report_says_what_serves_each_primitive() {
    let t = Trident::with_backends(vec![Box::new(Partial), Box::new(ReferenceBackend)]).unwrap();
    let by: Vec<(String, String)> = t
        .serving()
        .iter()
        .map(|s| {
            (
                format!("{} {}", s.primitive, s.scalar).trim().to_string(),
                s.backend.clone().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("dense_gemm f32", "reference"),
        ("dense_gemm f64", "reference"),
        ("sparse_gemm f32", "partial"),
        ("sparse_gemm f64", "reference"),
        ("nearest_pairs f32", "partial"),
        ("nearest_pairs f64", "reference"),
        ("sparse_coder f32", "partial"),
        ("sparse_coder f64", "reference"),
        ("max_flow", "partial"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(by, want);
    let report = t.report();
    assert!(report.contains("using partial + reference"), "{report}");
    assert!(
        report.contains("dense_gemm f32") && report.contains("(partial: no gemm here)"),
        "{report}"
    );
    assert!(Trident::with_backends(vec![]).is_err());
}

#[test]
fn the_default_handle_reports_every_primitive_served() {
    let t = Trident::probe();
    assert_eq!(t.serving().len(), 9);
    assert!(
        t.serving().iter().all(|s| s.backend.is_ok()),
        "{}",
        t.report()
    );
    // Probing is cached per process: a second handle sees the same backends.
    let u = Trident::probe();
    assert_eq!(t.primary(), u.primary());
    assert_eq!(t.candidates().len(), u.candidates().len());
}

#[cfg(unix)]
#[test]
fn a_non_utf8_backend_name_is_an_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    // What Trident::new() does with the variable's value; setting the real
    // variable would race with other tests reading the environment.
    match Trident::from_env_value(Some(OsStr::from_bytes(b"ray\xffon"))) {
        Err(Error::InvalidArgument { field, detail }) => {
            assert_eq!(field, "TRIDENT_BACKEND");
            assert!(detail.contains("UTF-8"), "{detail}");
        }
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(t) => panic!("expected an error, got a handle on {}", t.primary()),
    }
    assert_eq!(
        Trident::from_env_value(Some(OsStr::new(" rayon ")))
            .unwrap()
            .primary(),
        "rayon"
    );
    assert!(Trident::from_env_value(Some(OsStr::new(""))).is_ok());
    assert!(Trident::from_env_value(Some(OsStr::new("nope"))).is_err());
}
