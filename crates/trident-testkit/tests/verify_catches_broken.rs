//! The verifier must catch a wrong backend: a test-only backend that is the
//! reference with one primitive deliberately broken is run through
//! `verify::run` for each primitive, and the run must fail exactly there.
#![allow(missing_docs)]

use trident_core::{
    Backend, Coord, CsrMatrix, DenseGemm, Dictionary, FlowNetwork, GemmParams, GridCut, GridGraph,
    MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow, PRIMITIVES, Pair, Point,
    RadiusNeighbors, Result, Scalar, SparseCoder, SparseCodes, SparseGemm, StopRule,
};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::Size;
use trident_testkit::verify::{self, Candidate, Options};

/// The reference, except that `broken` (a primitive name, or "none") gives
/// slightly wrong answers.
struct Broken {
    broken: &'static str,
}

const R: ReferenceBackend = ReferenceBackend;

impl Broken {
    fn is(&self, p: &str) -> bool {
        self.broken == p
    }
}

impl Backend for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn describe(&self) -> String {
        format!("the reference with {} broken", self.broken)
    }
}

impl<T: Scalar> DenseGemm<T> for Broken {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        DenseGemm::<T>::gemm(&R, p, a, b, c.rb())?;
        if self.is("dense_gemm") && c.rows() > 0 && c.cols() > 0 {
            let x = &mut c.row_mut(0)[0];
            *x = T::from_f64(x.to_f64() + 1.0);
        }
        Ok(())
    }
}

impl<T: Scalar> SparseGemm<T> for Broken {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        let c = SparseGemm::<T>::spgemm(&R, a, b)?;
        if !self.is("sparse_gemm") || c.nnz() == 0 {
            return Ok(c);
        }
        let mut values = c.values().to_vec();
        values[0] = T::from_f64(values[0].to_f64() * 1.5 + 1.0);
        CsrMatrix::new(
            c.rows(),
            c.cols(),
            c.offsets().to_vec(),
            c.indices().to_vec(),
            values,
        )
    }
}

impl<T: Coord> NearestPairs<T> for Broken {
    fn nearest(&self, a: &[Point<T>], b: &[Point<T>], out: &mut [Neighbor<T>]) -> Result<()> {
        R.nearest(a, b, out)?;
        if self.is("nearest_pairs") && !a.is_empty() {
            // Answer the farthest point instead of the nearest for query 0.
            let far = (0..b.len())
                .max_by(|&i, &j| T::exact_d2(&a[0], &b[i]).total_cmp(&T::exact_d2(&a[0], &b[j])))
                .expect("B is not empty");
            out[0] = Neighbor {
                index: far as u32,
                d2: trident_core::dist2(&a[0], &b[far]),
            };
        }
        Ok(())
    }
    fn knn(&self, a: &[Point<T>], b: &[Point<T>], k: usize, out: &mut [Neighbor<T>]) -> Result<()> {
        R.knn(a, b, k, out)
    }
    fn closest_pairs(&self, a: &[Point<T>], b: &[Point<T>], k: usize) -> Result<Vec<Pair<T>>> {
        R.closest_pairs(a, b, k)
    }
    fn within(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        r: T,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<T>> {
        R.within(a, b, r, max_pairs)
    }
    fn self_pairs(&self, p: &[Point<T>], r: T, max_pairs: usize) -> Result<RadiusNeighbors<T>> {
        R.self_pairs(p, r, max_pairs)
    }
}

impl<T: Scalar> SparseCoder<T> for Broken {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        let mut codes = SparseCoder::<T>::encode(&R, dict, signals, rule)?;
        if self.is("sparse_coder") && !codes.coefs.is_empty() {
            codes.coefs[0] = T::from_f64(codes.coefs[0].to_f64() * 2.0 + 1.0);
        }
        Ok(codes)
    }
}

impl MaxFlow for Broken {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        let mut r = R.grid_cut(g)?;
        if self.is("max_flow") {
            r.flow += 1;
        }
        Ok(r)
    }
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        let mut r = R.network_flow(g)?;
        if self.is("max_flow") && !r.source_side.is_empty() {
            let last = r.source_side.len() - 1;
            r.source_side[last] = !r.source_side[last];
        }
        Ok(r)
    }
}

fn run(broken: &'static str, primitive: &str) -> verify::Report {
    let opts = Options {
        size: Size::Small,
        seed: trident_testkit::DEFAULT_SEED,
        primitive: Some(primitive.to_string()),
        ..Options::default()
    };
    let cand = Candidate {
        name: "broken".into(),
        backend: Ok(Box::new(Broken { broken })),
    };
    verify::run(&opts, vec![cand], &mut std::io::sink())
}

#[test]
fn a_broken_primitive_fails_verify() {
    for p in PRIMITIVES {
        let report = run(p, p);
        let row = report.row(p, "broken").expect("the broken backend ran");
        assert!(
            !report.ok(),
            "verify passed a backend with {p} broken:\n{}",
            report.table()
        );
        assert!(
            !row.failures.is_empty(),
            "{p}: no failure recorded:\n{}",
            report.table()
        );
        assert!(
            report.row(p, "reference").unwrap().failures.is_empty(),
            "{p}: the reference itself failed"
        );
        assert!(report.table().contains("verify: FAIL"));
    }
}

#[test]
fn the_same_wrapper_unbroken_passes() {
    for p in PRIMITIVES {
        let report = run("none", p);
        assert!(report.ok(), "{p}:\n{}", report.table());
        let row = report.row(p, "broken").unwrap();
        assert!(
            row.passed > 0 && row.passed == row.cases,
            "{p}:\n{}",
            report.table()
        );
    }
}

#[test]
fn unavailable_backends_fail_only_when_required() {
    let opts = |required: Vec<String>| Options {
        primitive: Some("max_flow".into()),
        seed: 1,
        required,
        ..Options::default()
    };
    let cand = || {
        vec![Candidate {
            name: "cuda".into(),
            backend: Err("no driver here".into()),
        }]
    };
    let optional = verify::run(&opts(vec![]), cand(), &mut std::io::sink());
    assert!(optional.ok(), "{}", optional.table());
    assert!(optional.table().contains("unavailable: no driver here"));
    let required = verify::run(&opts(vec!["cuda".into()]), cand(), &mut std::io::sink());
    assert!(!required.ok());
    assert!(required.table().contains("required but unavailable"));
}

#[test]
fn unknown_names_are_errors() {
    let o = Options {
        case: Some("no-such-case".into()),
        ..Options::default()
    };
    let r = verify::run(&o, vec![], &mut std::io::sink());
    assert!(!r.ok() && r.table().contains("no case named"));
    let o = Options {
        primitive: Some("fft".into()),
        ..Options::default()
    };
    assert!(!verify::run(&o, vec![], &mut std::io::sink()).ok());
}
