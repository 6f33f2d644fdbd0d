//! Run-time choice of a backend, with a record of why.
//!
//! Probing is done once per process and backend, and only for the backends
//! asked for: constructing the GPU backends costs tens of milliseconds
//! (loading the driver, asking for an adapter), and the answer does not change
//! while the process runs, so every [`Trident::new`] after the first reuses the
//! backends (and the reasons for passing some over) that the first one found,
//! and [`Trident::only`] constructs the named backend alone. Backends are
//! `Send + Sync` handles, safe to share.

use std::fmt::Write;
use std::sync::{Arc, Mutex, OnceLock};

use trident_core::{
    Backend, BackendKind, CsrMatrix, DenseGemm, Dictionary, Error, FlowNetwork, GemmParams,
    GridCut, GridGraph, MatMut, MatRef, MaxFlow, NearestPairs, Neighbor, NetworkFlow, Pair, Point,
    Primitive, Primitives, RadiusNeighbors, Result, SparseCoder, SparseCodes, SparseGemm, StopRule,
};

pub use crate::cost::{Choice, CostModel};

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
    chain: Vec<Arc<dyn Primitives>>,
    candidates: Vec<Candidate>,
    forced: bool,
    /// Which backend serves each primitive, found on the first `report`.
    serving: OnceLock<Vec<Serving>>,
    /// When the GPU is worth its transfers, per primitive.
    model: CostModel,
    /// Who served the last call, and why.
    last: Mutex<Option<Choice>>,
}

/// Which backend of a [`Trident`] serves one primitive in one precision.
#[derive(Debug, Clone)]
pub struct Serving {
    /// `"dense_gemm"`, ..., as in [`crate::PRIMITIVES`].
    pub primitive: &'static str,
    /// `"f32"`, `"f64"`, or `""` where the primitive has no scalar type.
    pub scalar: &'static str,
    /// The backend that answers it, or why none does.
    pub backend: std::result::Result<&'static str, String>,
    /// The backends before it that answered `Unsupported`, with their reasons.
    pub skipped: Vec<(&'static str, String)>,
}

/// Short, for logs and `{:?}` of structs holding a handle: the backends in
/// the order calls are offered to them, whether `TRIDENT_BACKEND` forced
/// one, the backends passed over (names only: [`Trident::report`] has the
/// reasons) and who served the last call.
impl std::fmt::Debug for Trident {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backends: Vec<&str> = self.chain.iter().map(|b| b.name()).collect();
        let passed_over: Vec<&str> = self
            .candidates
            .iter()
            .filter(|c| c.outcome.is_err())
            .map(|c| c.name)
            .collect();
        f.debug_struct("Trident")
            .field("backends", &backends)
            .field("forced", &self.forced)
            .field("passed_over", &passed_over)
            .field("served_last", &self.last_choice().map(|c| c.backend))
            .finish_non_exhaustive()
    }
}

/// One compiled-in backend's probe: the handle, or why it cannot run here.
type Probed = std::result::Result<Arc<dyn Primitives>, String>;

/// Backend `i` of [`PREFERENCE`], probed on first use only and then kept for
/// the process: `Trident::only("rayon")` must not load GPU drivers (which
/// costs time and, through the Vulkan loader's layers, can print to stderr).
fn probed(i: usize) -> &'static Probed {
    static PROBED: [OnceLock<Probed>; PREFERENCE.len()] =
        [const { OnceLock::new() }; PREFERENCE.len()];
    PROBED[i].get_or_init(|| probe_outcome(crate::backend_by_name(PREFERENCE[i])))
}

/// A constructor's answer as a probe: the handle, or the reason it cannot
/// run here. Any error passes the backend over (a driver too old for the
/// CUDA kernels is `BackendUnavailable` naming both versions), so a call
/// goes to the next backend rather than failing.
fn probe_outcome(built: Result<Box<dyn Primitives>>) -> Probed {
    built.map(Arc::from).map_err(|e| match e {
        Error::BackendUnavailable(why) => why,
        e => e.to_string(),
    })
}

/// The order in which the facade offers calls to backends given in
/// preference order as `(name, software_device)`: the same order, except
/// that software devices move to just after rayon (when rayon is there).
fn ranked(backends: &[(&str, bool)]) -> Vec<usize> {
    let Some(r) = backends.iter().position(|&(n, _)| n == "rayon") else {
        return (0..backends.len()).collect();
    };
    let slow = |i: usize| i < r && backends[i].1;
    let mut order: Vec<usize> = (0..=r).filter(|&i| !slow(i)).collect();
    order.extend((0..r).filter(|&i| slow(i)));
    order.extend(r + 1..backends.len());
    order
}

impl Trident {
    /// The compiled-in backends that run here (or the one `TRIDENT_BACKEND`
    /// names), probed once per process (see the module docs).
    ///
    /// Errors: `TRIDENT_BACKEND` names an unknown or unavailable backend, or
    /// is not valid UTF-8 (an error rather than silently ignored).
    pub fn new() -> Result<Self> {
        Self::from_env_value(std::env::var_os(BACKEND_ENV).as_deref())
    }

    /// What [`Trident::new`] does with the value of `TRIDENT_BACKEND` (`None`
    /// when unset): all backends when unset or blank, else only the named one.
    pub fn from_env_value(value: Option<&std::ffi::OsStr>) -> Result<Self> {
        match value {
            None => Ok(Self::probe()),
            Some(raw) => match raw.to_str() {
                None => Err(Error::arg(
                    "TRIDENT_BACKEND",
                    format!("{raw:?} is not valid UTF-8; expected one of {PREFERENCE:?}"),
                )),
                Some(name) if name.trim().is_empty() => Ok(Self::probe()),
                Some(name) => Self::only(name.trim()),
            },
        }
    }

    /// Uses exactly the backend called `name`, no fallback.
    pub fn only(name: &str) -> Result<Self> {
        let b: Arc<dyn Primitives> = match PREFERENCE.iter().position(|&n| n == name) {
            Some(i) => match probed(i) {
                Ok(b) => b.clone(),
                Err(why) => return Err(Error::BackendUnavailable(why.clone())),
            },
            None => Arc::from(crate::backend_by_name(name)?),
        };
        let candidates = vec![Candidate {
            name: b.name(),
            outcome: Ok(b.describe()),
        }];
        Ok(Self {
            chain: vec![b],
            candidates,
            forced: true,
            serving: OnceLock::new(),
            model: CostModel::default(),
            last: Mutex::new(None),
        })
    }

    /// Every compiled-in backend that runs here, in [`PREFERENCE`] order,
    /// except that a backend on a software device (wgpu on llvmpipe) comes
    /// after rayon.
    pub fn probe() -> Self {
        Self::probe_with(|i| probed(i).clone())
    }

    /// [`Trident::probe`] with the CUDA backend on GPU `device` (the other
    /// backends have one device each): how each rank of a cluster
    /// (`trident::dist`) or each thread of a multi-GPU program takes its own
    /// GPU. Backends are constructed afresh, not shared with [`Trident::new`].
    pub fn on_device(device: usize) -> Self {
        Self::probe_with(|i| {
            let kind =
                BackendKind::from_name(PREFERENCE[i]).ok_or_else(|| PREFERENCE[i].to_string())?;
            probe_outcome(crate::backend_on(kind, device))
        })
    }

    fn probe_with(get: impl Fn(usize) -> Probed) -> Self {
        let mut chain: Vec<Arc<dyn Primitives>> = Vec::new();
        let mut candidates = Vec::new();
        for (i, name) in PREFERENCE.iter().enumerate() {
            match get(i) {
                Ok(b) => {
                    let mut d = b.describe();
                    if b.software_device() {
                        d.push_str("; a software device, ranked after rayon");
                    }
                    candidates.push(Candidate {
                        name,
                        outcome: Ok(d),
                    });
                    chain.push(b);
                }
                Err(why) => candidates.push(Candidate {
                    name,
                    outcome: Err(why),
                }),
            }
        }
        let ranks: Vec<(&str, bool)> = chain
            .iter()
            .map(|b| (b.name(), b.software_device()))
            .collect();
        let chain = ranked(&ranks).iter().map(|&i| chain[i].clone()).collect();
        Self {
            chain,
            candidates,
            forced: false,
            serving: OnceLock::new(),
            model: CostModel::default(),
            last: Mutex::new(None),
        }
    }

    /// A handle over exactly these backends, tried in this order (a call a
    /// backend answers with [`Error::Unsupported`] goes to the next). Fails
    /// on an empty list.
    pub fn with_backends(backends: Vec<Box<dyn Primitives>>) -> Result<Self> {
        if backends.is_empty() {
            return Err(Error::arg("backends", "no backend given"));
        }
        let chain: Vec<Arc<dyn Primitives>> = backends.into_iter().map(Arc::from).collect();
        let candidates = chain
            .iter()
            .map(|b| Candidate {
                name: b.name(),
                outcome: Ok(b.describe()),
            })
            .collect();
        Ok(Self {
            chain,
            candidates,
            forced: false,
            serving: OnceLock::new(),
            model: CostModel::default(),
            last: Mutex::new(None),
        })
    }

    /// The same handle with another cost model (e.g. constants measured on
    /// this machine; [`CostModel::preference_only`] restores the fixed order).
    pub fn with_cost_model(mut self, model: CostModel) -> Self {
        self.model = model;
        self
    }

    /// The cost model that orders backends per call.
    pub fn cost_model(&self) -> &CostModel {
        &self.model
    }

    /// Which backend served the last call made through this handle, and why
    /// (`None` before the first call).
    pub fn last_choice(&self) -> Option<Choice> {
        self.last.lock().ok().and_then(|l| l.clone())
    }

    /// Name of the backend that served the last call (the one calls are
    /// offered to first, [`Trident::primary`], before any call): what a
    /// report of a finished call should name.
    pub fn served_last(&self) -> &'static str {
        self.last_choice().map_or(self.primary(), |c| c.backend)
    }

    /// Name of the backend that calls are offered to first (it may still hand
    /// some primitives on: [`Trident::serving`] says which serves what).
    pub fn primary(&self) -> &'static str {
        self.chain[0].name()
    }

    /// Every backend considered, with why it was used or passed over.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// Which backend serves each primitive in each precision, found by one
    /// tiny call per primitive (the first time only): a backend that is
    /// available but answers [`Error::Unsupported`] (wgpu on a software
    /// adapter, f64 on wgpu, a primitive not written yet) does not serve it,
    /// and the report must not say it does.
    pub fn serving(&self) -> &[Serving] {
        self.serving
            .get_or_init(|| crate::serving::probe_all(&self.chain))
    }

    /// A few lines saying which backend serves each primitive, and why the
    /// backends passed over were not used.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let how = if self.forced {
            format!(" (forced by {BACKEND_ENV})")
        } else {
            String::new()
        };
        // The backends that serve something, in chain order.
        let names: Vec<&str> = self
            .chain
            .iter()
            .map(|b| b.name())
            .filter(|&n| self.serving().iter().any(|sv| sv.backend == Ok(n)))
            .collect();
        let _ = writeln!(s, "trident: using {}{how}", names.join(" + "));
        for sv in self.serving() {
            let what = format!("{} {}", sv.primitive, sv.scalar);
            let line = match &sv.backend {
                Ok(b) => format!("served by {b}"),
                Err(why) => format!("not served: {why}"),
            };
            let _ = write!(s, "  {:<18} {line}", what.trim_end());
            for (b, why) in &sv.skipped {
                let _ = write!(s, " ({b}: {why})");
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "  per call: {}", self.model.describe());
        if let Some(c) = self.last_choice() {
            let _ = writeln!(s, "  last call: {c}");
        }
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

    /// Runs `f` on the backend the cost model expects to be fastest for a
    /// call of `primitive` with `work` (its size, [`CostModel`]'s unit), then
    /// on the others in chain order while they answer `Unsupported`; records
    /// the choice for [`Trident::last_choice`]. The call runs inside a
    /// debug `trident` span (primitive, work), and the choice is a debug
    /// event in it: backends' own phase events nest under the call.
    fn serve<R>(
        &self,
        primitive: Primitive,
        work: f64,
        mut f: impl FnMut(&dyn Primitives) -> Result<R>,
    ) -> Result<R> {
        if self.chain.is_empty() {
            return Err(Error::BackendUnavailable("no backend runs here".into()));
        }
        let span = tracing::debug_span!("trident", primitive = primitive.name(), work);
        let _in_span = span.enter();
        let names: Vec<&'static str> = self.chain.iter().map(|b| b.name()).collect();
        let first = if self.forced {
            0
        } else {
            self.model.first(primitive, work, &names)
        };
        let order = std::iter::once(first).chain((0..self.chain.len()).filter(|&i| i != first));
        let mut skipped = Vec::new();
        let mut last = None;
        for i in order {
            let b = &self.chain[i];
            match f(b.as_ref()) {
                Err(Error::Unsupported(why)) => {
                    last = Some(Error::Unsupported(format!("{}: {why}", b.name())));
                    skipped.push((b.name(), why));
                }
                other => {
                    tracing::debug!(
                        backend = b.name(),
                        preferred = names[first],
                        forced = self.forced,
                        unsupported_on = ?skipped.iter().map(|s| s.0).collect::<Vec<_>>(),
                        "served"
                    );
                    let choice = Choice {
                        primitive,
                        backend: b.name(),
                        work,
                        preferred: names[first],
                        crossover: BackendKind::from_name(names[0]).and_then(|k| {
                            self.model.crossover(k, primitive).map(|w| (k.name(), w))
                        }),
                        forced: self.forced,
                        skipped,
                    };
                    if let Ok(mut l) = self.last.lock() {
                        *l = Some(choice);
                    }
                    return other;
                }
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
                // In f64: the product of three dimensions may overflow usize.
                let (m, k) = a.op_shape(p.op_a);
                let work = m as f64 * k as f64 * b.op_shape(p.op_b).1 as f64;
                self.serve(Primitive::DenseGemm, work, |be| be.gemm(p, a, b, c.rb()))
            }
        }

        impl SparseGemm<$t> for Trident {
            fn spgemm(&self, a: &CsrMatrix<$t>, b: &CsrMatrix<$t>) -> Result<CsrMatrix<$t>> {
                let work = (a.nnz() + b.nnz()) as f64;
                self.serve(Primitive::SparseGemm, work, |be| be.spgemm(a, b))
            }
        }

        impl SparseCoder<$t> for Trident {
            fn encode(
                &self,
                dict: &Dictionary<$t>,
                signals: MatRef<'_, $t>,
                rule: StopRule,
            ) -> Result<SparseCodes<$t>> {
                let work = dict.n() as f64 * dict.atoms() as f64 * signals.rows() as f64;
                self.serve(Primitive::SparseCoder, work, |be| {
                    be.encode(dict, signals, rule)
                })
            }
        }

        impl NearestPairs<$t> for Trident {
            fn nearest(
                &self,
                a: &[Point<$t>],
                b: &[Point<$t>],
                out: &mut [Neighbor<$t>],
            ) -> Result<()> {
                self.serve(Primitive::NearestPairs, (a.len() + b.len()) as f64, |be| {
                    be.nearest(a, b, out)
                })
            }
            fn knn(
                &self,
                a: &[Point<$t>],
                b: &[Point<$t>],
                k: usize,
                out: &mut [Neighbor<$t>],
            ) -> Result<()> {
                self.serve(Primitive::NearestPairs, (a.len() + b.len()) as f64, |be| {
                    be.knn(a, b, k, out)
                })
            }
            fn closest_pairs(
                &self,
                a: &[Point<$t>],
                b: &[Point<$t>],
                k: usize,
            ) -> Result<Vec<Pair<$t>>> {
                self.serve(Primitive::NearestPairs, (a.len() + b.len()) as f64, |be| {
                    be.closest_pairs(a, b, k)
                })
            }
            fn within(
                &self,
                a: &[Point<$t>],
                b: &[Point<$t>],
                r: $t,
                max_pairs: usize,
            ) -> Result<RadiusNeighbors<$t>> {
                self.serve(Primitive::NearestPairs, (a.len() + b.len()) as f64, |be| {
                    be.within(a, b, r, max_pairs)
                })
            }
            fn self_pairs(
                &self,
                p: &[Point<$t>],
                r: $t,
                max_pairs: usize,
            ) -> Result<RadiusNeighbors<$t>> {
                self.serve(Primitive::NearestPairs, p.len() as f64, |be| {
                    be.self_pairs(p, r, max_pairs)
                })
            }
        }
    };
}
scalar_impls!(f32);
scalar_impls!(f64);

impl MaxFlow for Trident {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        self.serve(Primitive::MaxFlow, g.nodes() as f64, |be| be.grid_cut(g))
    }
    /// Networks count as no work: below every crossover, so rayon first
    /// (see [`crate::CostModel`]).
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        self.serve(Primitive::MaxFlow, 0.0, |be| be.network_flow(g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_devices_go_after_rayon() {
        let c = |v: &[(&str, bool)]| ranked(v);
        // wgpu on llvmpipe: rayon first, then wgpu, then the reference.
        let v = [
            ("cuda", false),
            ("wgpu", true),
            ("rayon", false),
            ("reference", false),
        ];
        assert_eq!(c(&v), [0, 2, 1, 3]);
        let v = [("wgpu", true), ("rayon", false), ("reference", false)];
        assert_eq!(c(&v), [1, 0, 2]);
        // A GPU adapter keeps its place.
        let v = [("wgpu", false), ("rayon", false), ("reference", false)];
        assert_eq!(c(&v), [0, 1, 2]);
        // Without rayon nothing moves.
        let v = [("wgpu", true), ("reference", false)];
        assert_eq!(c(&v), [0, 1]);
        assert_eq!(c(&[]), Vec::<usize>::new());
    }

    /// A backend whose constructor answers `BackendUnavailable` (CUDA on a
    /// driver older than its NVRTC) is passed over with its reason, and
    /// calls run on the next backend.
    #[cfg(feature = "rayon")]
    #[test]
    fn an_unavailable_backend_is_passed_over_with_its_reason() {
        let why = "CUDA device 0: CUDA driver 12.4 (12040) is older than the 13.0 that \
                   NVRTC 13.0 needs: update the NVIDIA driver to 580 or newer";
        let t = Trident::probe_with(|i| {
            probe_outcome(match PREFERENCE[i] {
                "cuda" => Err(Error::BackendUnavailable(why.into())),
                "rayon" => crate::backend(BackendKind::Rayon),
                other => Err(Error::BackendUnavailable(format!(
                    "{other}: not in this test"
                ))),
            })
        });
        assert_eq!(t.primary(), "rayon");
        let cuda = t.candidates().iter().find(|c| c.name == "cuda").unwrap();
        assert_eq!(cuda.outcome.as_ref().unwrap_err(), why);
        let report = t.report();
        assert!(
            report.lines().any(|l| l.trim_start().starts_with("cuda")
                && l.ends_with(&format!("passed over: {why}"))),
            "{report}"
        );
        let a = [1.0f32, 2.0, 3.0, 4.0];
        let mut c = [0.0f32; 4];
        t.gemm(
            &GemmParams::default(),
            MatRef::dense(&a, 2, 2).unwrap(),
            MatRef::dense(&a, 2, 2).unwrap(),
            MatMut::dense(&mut c, 2, 2).unwrap(),
        )
        .unwrap();
        assert_eq!(c, [7.0, 10.0, 15.0, 22.0]);
        assert_eq!(t.served_last(), "rayon");
    }
}
