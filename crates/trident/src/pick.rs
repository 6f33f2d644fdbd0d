//! Run-time choice of a backend, with a record of why.

use std::fmt::Write;

use trident_core::{
    Backend, BackendKind, CsrMatrix, DenseGemm, Dictionary, Error, FlowNetwork, GemmParams,
    GridCut, GridGraph, MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow, Pair, Point,
    Primitives, Result, SparseCoder, SparseCodes, SparseGemm, StopRule,
};

/// The environment variable that overrides the pick: `TRIDENT_BACKEND=rayon`.
pub const BACKEND_ENV: &str = "TRIDENT_BACKEND";

/// Backend names in the order [`Trident::new`] prefers them
/// ([`BackendKind::ALL`]).
pub const PREFERENCE: [&str; 4] = [
    BackendKind::ALL[0].name(),
    BackendKind::ALL[1].name(),
    BackendKind::ALL[2].name(),
    BackendKind::ALL[3].name(),
];

/// One backend considered by [`Trident::new`] and what became of it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Backend name.
    pub name: &'static str,
    /// `Ok(description)` if it runs here, `Err(reason)` if it was passed over.
    pub outcome: std::result::Result<String, String>,
}

/// A handle over the best backends available here.
///
/// Calls go to the first backend in preference order that runs on this machine;
/// a backend that answers [`Error::Unsupported`] for a call (a primitive it does
/// not have yet, f64 on wgpu) hands that call to the next one, so every call is
/// served. With `TRIDENT_BACKEND` set, only the named backend is used: an
/// unavailable name is an error, and nothing falls back.
pub struct Trident {
    chain: Vec<Box<dyn Primitives>>,
    candidates: Vec<Candidate>,
    forced: bool,
}

impl Trident {
    /// Probes the compiled-in backends (or the one `TRIDENT_BACKEND` names).
    pub fn new() -> Result<Self> {
        match std::env::var(BACKEND_ENV) {
            Ok(name) if !name.trim().is_empty() => Self::only(name.trim()),
            _ => Ok(Self::probe()),
        }
    }

    /// Uses exactly the backend called `name`, no fallback.
    pub fn only(name: &str) -> Result<Self> {
        let b = crate::backend_by_name(name)?;
        let candidates = vec![Candidate {
            name: b.name(),
            outcome: Ok(b.describe()),
        }];
        Ok(Self {
            chain: vec![b],
            candidates,
            forced: true,
        })
    }

    /// Probes every compiled-in backend in [`PREFERENCE`] order.
    pub fn probe() -> Self {
        let mut chain = Vec::new();
        let mut candidates = Vec::new();
        for kind in BackendKind::ALL {
            let name = kind.name();
            match crate::backend(kind) {
                Ok(b) => {
                    candidates.push(Candidate {
                        name,
                        outcome: Ok(b.describe()),
                    });
                    chain.push(b);
                }
                Err(e) => candidates.push(Candidate {
                    name,
                    outcome: Err(e.to_string()),
                }),
            }
        }
        Self {
            chain,
            candidates,
            forced: false,
        }
    }

    /// Name of the backend that serves calls first.
    pub fn primary(&self) -> &'static str {
        self.chain[0].name()
    }

    /// Every backend considered, with why it was used or passed over.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// A few lines saying which backend was picked and why the others were not.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let how = if self.forced {
            format!(" (forced by {BACKEND_ENV})")
        } else {
            String::new()
        };
        let _ = writeln!(s, "trident: using {}{how}", self.primary());
        for c in &self.candidates {
            match &c.outcome {
                Ok(d) => {
                    let _ = writeln!(s, "  {:<10} available: {d}", c.name);
                }
                Err(why) => {
                    let _ = writeln!(s, "  {:<10} passed over: {why}", c.name);
                }
            }
        }
        s
    }

    /// Runs `f` on the first backend that does not answer `Unsupported`.
    fn serve<R>(&self, mut f: impl FnMut(&dyn Primitives) -> Result<R>) -> Result<R> {
        let mut last = None;
        for b in &self.chain {
            match f(b.as_ref()) {
                Err(Error::Unsupported(why)) => {
                    last = Some(Error::Unsupported(format!("{}: {why}", b.name())))
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| Error::BackendUnavailable("no backend".into())))
    }
}

impl Backend for Trident {
    fn name(&self) -> &'static str {
        self.primary()
    }
    fn describe(&self) -> String {
        self.chain[0].describe()
    }
}

macro_rules! scalar_impls {
    ($t:ty) => {
        impl DenseGemm<$t> for Trident {
            fn gemm(
                &self,
                p: &GemmParams<$t>,
                a: MatRef<'_, $t>,
                b: MatRef<'_, $t>,
                mut c: MatMut<'_, $t>,
            ) -> Result<()> {
                self.serve(|be| be.gemm(p, a, b, c.rb()))
            }
        }

        impl SparseGemm<$t> for Trident {
            fn spgemm(&self, a: &CsrMatrix<$t>, b: &CsrMatrix<$t>) -> Result<CsrMatrix<$t>> {
                self.serve(|be| be.spgemm(a, b))
            }
        }

        impl SparseCoder<$t> for Trident {
            fn encode(
                &self,
                dict: &Dictionary<$t>,
                signals: MatRef<'_, $t>,
                rule: StopRule,
            ) -> Result<SparseCodes<$t>> {
                self.serve(|be| be.encode(dict, signals, rule))
            }
        }
    };
}
scalar_impls!(f32);
scalar_impls!(f64);

impl NearestPairs for Trident {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        self.serve(|be| be.nearest(a, b, out))
    }
    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        self.serve(|be| be.knn(a, b, k, out))
    }
    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        self.serve(|be| be.closest_pairs(a, b, k))
    }
}

impl MaxFlow for Trident {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        self.serve(|be| be.grid_cut(g))
    }
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        self.serve(|be| be.network_flow(g))
    }
}
