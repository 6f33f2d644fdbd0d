//! # trident-benches
//!
//! What the criterion benches (`benches/benches/*.rs`) and the table printer
//! (`bench_table`) share: the benchmark cases as [`Workload`]s, the
//! smaller stand-ins the single-threaded reference runs instead of the cases it
//! would need minutes per call for ([`reference_stand_in`]), a [`runner`] that
//! times only the primitive call, and the contract's report units ([`Work`]).
//!
//! It is not a correctness check: `verify` compares outputs with the
//! reference; here outputs are only kept long enough to be dropped outside the
//! timed region and to give one number ([`Output::check`]) that a peer library
//! run on the same input file should reproduce.

pub mod kiddo_peer;
pub mod npy;
pub mod timing;

use trident::{CsrMatrix, Error, GridCut, NetworkFlow, Pair, Primitives, Result, SparseCodes};
use trident_testkit::cases::{self, Case, GemmCase, Input, OmpCase, PairsCase, SpgemmCase};

/// Shows the libraries' `tracing` events (phase timings, which backend
/// served, solver counts) on stderr when `RUST_LOG` is set to a level
/// (`debug`) or crate=level pairs (`trident_rayon=debug`); each bench
/// program calls it first. A value it cannot read is reported, not fatal.
pub fn log_from_env() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let Ok(spec) = std::env::var("RUST_LOG") else {
        return;
    };
    match spec.parse::<tracing_subscriber::filter::Targets>() {
        Ok(filter) => {
            let _ = tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
                .with(filter)
                .try_init();
        }
        Err(e) => eprintln!("RUST_LOG={spec:?} is not a log filter ({e}); no diagnostics"),
    }
}

/// One thing to time: a benchmark case, or a smaller stand-in for one.
pub struct Workload {
    /// The bench id: the benchmark case name, or `case/size` for a stand-in
    /// (e.g. `omp-64x256-k16/10K`), so a report never passes a smaller run off
    /// as the benchmark case.
    pub name: String,
    /// The generated input.
    pub input: Input,
}

impl Workload {
    /// Generates `case`'s input under base seed `seed`.
    pub fn new(case: &Case, seed: u64) -> Self {
        Self {
            name: case.name.clone(),
            input: case.input(seed),
        }
    }

    /// The benchmark case it measures (peer results are matched on this).
    pub fn case(&self) -> &str {
        self.name.split('/').next().unwrap_or(&self.name)
    }

    /// `true` for a stand-in smaller than the benchmark case.
    pub fn is_stand_in(&self) -> bool {
        self.name.contains('/')
    }
}

/// The benchmark cases (full size) whose names are in `names`, in catalog order; all of
/// them when `names` is empty. Unknown names are returned as the error, so a
/// typo is reported rather than silently running nothing.
pub fn select_cases(names: &[String]) -> std::result::Result<Vec<Case>, Vec<String>> {
    let mut all = cases::spec_cases();
    if !names.is_empty() {
        all.extend(extra_cases());
    }
    let unknown: Vec<String> = names
        .iter()
        .filter(|n| !all.iter().any(|c| &c.name == *n))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    Ok(all
        .into_iter()
        .filter(|c| names.is_empty() || names.contains(&c.name))
        .collect())
}

/// The GEMM calls shaped as BLAS users write them ([`gemm_variant`]).
pub const GEMM_VARIANTS: [&str; 7] = ["tn", "nt", "tt", "ld", "ab", "odd", "all"];

/// One GEMM call shaped as BLAS users write it, at size `n` (odd sizes near
/// it): `tn`, `nt`, `tt` (transposes), `ld` (every buffer padded by 8
/// elements per row), `ab` (alpha 1.5, beta -0.5), `odd` (`(n-1) x (n+3) x
/// (n-5)`) and `all` (both transposed, padding 3, alpha and beta, odd
/// sizes). `None` for another name.
pub fn gemm_variant<T: trident::Scalar>(n: usize, variant: &str) -> Option<cases::GemmCase<T>> {
    use trident::{GemmParams, Op};
    let p = |op_a, op_b, alpha: f64, beta: f64| GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        op_a,
        op_b,
        ..GemmParams::default()
    };
    let (m, nn, k, params, pad) = match variant {
        "tn" => (n, n, n, p(Op::T, Op::N, 1.0, 0.0), 0),
        "nt" => (n, n, n, p(Op::N, Op::T, 1.0, 0.0), 0),
        "tt" => (n, n, n, p(Op::T, Op::T, 1.0, 0.0), 0),
        "ld" => (n, n, n, p(Op::N, Op::N, 1.0, 0.0), 8),
        "ab" => (n, n, n, p(Op::N, Op::N, 1.5, -0.5), 0),
        "odd" => (n - 1, n + 3, n - 5, p(Op::N, Op::N, 1.0, 0.0), 0),
        "all" => (n - 1, n + 3, n - 5, p(Op::T, Op::T, 1.5, -0.5), 3),
        _ => return None,
    };
    Some(cases::gemm_general(m, nn, k, params, pad, 0x6e44))
}

/// Every [`GEMM_VARIANTS`] at size `n`, named `gemm-<n>-<variant>` (and
/// `-f64`).
pub fn gemm_variant_cases<T: trident::Scalar>(n: usize) -> Vec<(String, cases::GemmCase<T>)> {
    let suffix = if T::NAME == "f64" { "-f64" } else { "" };
    GEMM_VARIANTS
        .iter()
        .filter_map(|v| Some((format!("gemm-{n}-{v}{suffix}"), gemm_variant(n, v)?)))
        .collect()
}

/// Cases outside the benchmark table, selectable by name only: `gemm-2048` (the
/// CPU backend's GEMM target size), the f64 GEMMs the CPU tables
/// compare with numpy (`gemm-2048-f64`, `gemm-4096-f64`), and `gemm-1024`
/// (and `-f64`) with its BLAS-shaped variants ([`gemm_variant`]); and the
/// SpGEMM shapes beside the three benchmark matrices ([`SPGEMM_SHAPES`]).
pub fn extra_cases() -> Vec<Case> {
    let mut v = vec![
        Case::new("gemm-1024", "dense_gemm", false, |s| {
            Input::Gemm32(cases::gemm(1024, s))
        }),
        Case::new("gemm-1024-f64", "dense_gemm", false, |s| {
            Input::Gemm64(cases::gemm(1024, s))
        }),
    ];
    for variant in GEMM_VARIANTS {
        v.push(Case::new(
            format!("gemm-1024-{variant}"),
            "dense_gemm",
            false,
            move |_| {
                Input::Gemm32(gemm_variant(1024, variant).unwrap_or_else(|| cases::gemm(1024, 0)))
            },
        ));
        v.push(Case::new(
            format!("gemm-1024-{variant}-f64"),
            "dense_gemm",
            false,
            move |_| {
                Input::Gemm64(gemm_variant(1024, variant).unwrap_or_else(|| cases::gemm(1024, 0)))
            },
        ));
    }
    v.extend(vec![
        Case::new("gemm-2048", "dense_gemm", false, |s| {
            Input::Gemm32(cases::gemm(2048, s))
        }),
        Case::new("gemm-2048-f64", "dense_gemm", false, |s| {
            Input::Gemm64(cases::gemm(2048, s))
        }),
        Case::new("gemm-4096-f64", "dense_gemm", false, |s| {
            Input::Gemm64(cases::gemm(4096, s))
        }),
    ]);
    v.extend(spgemm_shapes());
    v
}

/// The SpGEMM matrices of other shapes that the research codes are compared
/// on beside the three benchmark ones, each squared in f32: banded
/// finite-element (27-point hexahedra, 80^3 nodes), a web-graph-like link
/// matrix (power-law out- and in-degrees, local links) and a few very long
/// rows (16 rows of 100K among 1M rows of 8).
pub const SPGEMM_SHAPES: [&str; 3] = ["spgemm-fem-hex27-80", "spgemm-web-1M", "spgemm-longrows-1M"];

fn spgemm_shapes() -> Vec<Case> {
    use trident_testkit::sparse_gemm::generate as g;
    let p = "sparse_gemm";
    vec![
        Case::new(SPGEMM_SHAPES[0], p, false, |_| {
            Input::Spgemm32(SpgemmCase::square(g::hex27(80)))
        }),
        Case::new(SPGEMM_SHAPES[1], p, false, |s| {
            Input::Spgemm32(SpgemmCase::square(g::web_graph(1 << 20, s)))
        }),
        Case::new(SPGEMM_SHAPES[2], p, false, |s| {
            Input::Spgemm32(SpgemmCase::square(g::long_rows(1 << 20, 8, 16, 100_000, s)))
        }),
    ]
}

/// The benchmark cases of one primitive (one of [`trident::PRIMITIVES`]).
pub fn spec_cases_of(primitive: &str) -> Vec<Case> {
    cases::spec_cases()
        .into_iter()
        .filter(|c| c.primitive == primitive)
        .collect()
}

/// The smaller case the reference backend runs instead of `case`, where the
/// full case would take it more than about 30 s per call on a 2-core machine
/// (measured on a busy 2-core box: gemm-4096 takes it 12 s, so gemm-8192
/// would take ~100 s; OMP codes ~870 signals/s, so 1M signals ~20 min; every
/// other benchmark case takes it 6 to 27 s); `None` where the reference runs the
/// case itself. A
/// stand-in keeps the case's structure and shrinks only its size, and its
/// name says so (`gemm-8192/2048`). Like every case, its input is generated
/// only when asked for.
pub fn reference_stand_in(case: &Case) -> Option<Case> {
    let stand_in = |size: &str, make: fn(u64) -> Input| {
        Some(Case::new(
            format!("{}/{size}", case.name),
            case.primitive,
            false,
            make,
        ))
    };
    match case.name.as_str() {
        "gemm-8192" => stand_in("2048", |s| Input::Gemm32(cases::gemm(2048, s))),
        "omp-64x256-k16" => stand_in("10K", |s| Input::Omp32(cases::omp_dct(10_000, s))),
        // 32 steps of from-scratch least squares on 256-long atoms per signal:
        // about 60x the work of omp-64x256-k16 per signal.
        "omp-256x1024-k32" => stand_in("200", |s| Input::Omp32(cases::omp_dct_256(200, s))),
        _ => None,
    }
}

/// Why `backend` cannot run `case`, found on a tiny input of the same kind
/// (same primitive and scalar), so that a primitive a backend lacks is
/// reported without first generating gigabytes of input: `Some("unsupported:
/// ...")` or `Some("error: ...")`, `None` when it runs.
pub fn cannot_run(backend: &dyn Primitives, case: &Case) -> Option<String> {
    let tiny = match case.primitive {
        "dense_gemm" => Input::Gemm32(cases::gemm(8, 1)),
        "sparse_gemm" => Input::Spgemm32(cases::SpgemmCase::square(cases::poisson2d(4))),
        "nearest_pairs" => Input::Pairs(cases::pairs_uniform(20, 10, 1)),
        "sparse_coder" => Input::Omp32(cases::omp_dct(4, 1)),
        "max_flow" if case.name.starts_with("cut") => Input::Grid(cases::cut(8, 1)),
        "max_flow" => Input::Network(cases::genrmf(2, 2, 1, 10, 1)),
        other => return Some(format!("error: no tiny input for primitive {other:?}")),
    };
    match runner(backend, &tiny)() {
        Ok(_) => None,
        Err(Error::Unsupported(why)) => Some(format!("unsupported: {why}")),
        Err(e) => Some(format!("error: {e}")),
    }
}

/// The contract's report unit for a primitive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// GEMM: `2 m n k / time`, in TFLOP/s.
    Tflops,
    /// SpGEMM: `2 * products / time` in GFLOP/s, products = sum over A's
    /// entries `(i, p)` of the entries in B's row `p`.
    Gflops,
    /// OMP: signals coded per second.
    SignalsPerSec,
    /// Pairs and max-flow: the time itself, in ms.
    Ms,
}

/// The amount of work in an input, in the terms of its report unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    /// The unit the contract reports this primitive in.
    pub unit: Unit,
    /// Flops for GEMM and SpGEMM, signals for OMP, 0 where the unit is ms.
    pub amount: f64,
}

impl Work {
    /// The work in `input`.
    pub fn of(input: &Input) -> Self {
        let gemm = |m: usize, n: usize, k: usize| Work {
            unit: Unit::Tflops,
            amount: 2.0 * m as f64 * n as f64 * k as f64,
        };
        fn spgemm<T: trident::Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Work {
            Work {
                unit: Unit::Gflops,
                amount: 2.0 * a.products_with(b) as f64,
            }
        }
        let omp = |count: usize| Work {
            unit: Unit::SignalsPerSec,
            amount: count as f64,
        };
        if let Some(c) = input.downcast_ref::<GemmCase<f32>>() {
            gemm(c.m, c.n, c.k)
        } else if let Some(c) = input.downcast_ref::<GemmCase<f64>>() {
            gemm(c.m, c.n, c.k)
        } else if let Some(c) = input.downcast_ref::<SpgemmCase<f32>>() {
            spgemm(&c.a, &c.b)
        } else if let Some(c) = input.downcast_ref::<SpgemmCase<f64>>() {
            spgemm(&c.a, &c.b)
        } else if let Some(c) = input.downcast_ref::<OmpCase<f32>>() {
            omp(c.count)
        } else if let Some(c) = input.downcast_ref::<OmpCase<f64>>() {
            omp(c.count)
        } else {
            // Pairs and max-flow are reported as the time itself.
            Work {
                unit: Unit::Ms,
                amount: 0.0,
            }
        }
    }

    /// The figure the contract reports for a call that took `secs`.
    pub fn value(&self, secs: f64) -> f64 {
        match self.unit {
            Unit::Tflops => self.amount / secs / 1e12,
            Unit::Gflops => self.amount / secs / 1e9,
            Unit::SignalsPerSec => self.amount / secs,
            Unit::Ms => secs * 1e3,
        }
    }

    /// The unit's name as the contract writes it.
    pub fn unit_name(&self) -> &'static str {
        match self.unit {
            Unit::Tflops => "TFLOP/s",
            Unit::Gflops => "GFLOP/s",
            Unit::SignalsPerSec => "signals/s",
            Unit::Ms => "ms",
        }
    }

    /// [`Work::value`] formatted with its unit, e.g. `"1.23 TFLOP/s"`.
    pub fn format(&self, secs: f64) -> String {
        let v = self.value(secs);
        match self.unit {
            Unit::SignalsPerSec => format!("{} {}", si(v), self.unit_name()),
            _ => format!("{} {}", sig3(v), self.unit_name()),
        }
    }
}

/// A number to 3 significant digits without an exponent (`0.0123`, `12.3`, `1234`).
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// A count with an SI suffix to 3 significant digits (`1.23M`, `456K`).
pub fn si(v: f64) -> String {
    for (scale, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "K")] {
        if v.abs() >= scale {
            return format!("{}{suffix}", sig3(v / scale));
        }
    }
    sig3(v)
}

/// A duration in the unit that reads best: `812 ms`, `3.41 s`, `95.2 us`.
pub fn format_secs(secs: f64) -> String {
    if secs >= 1.0 {
        format!("{} s", sig3(secs))
    } else if secs >= 1e-3 {
        format!("{} ms", sig3(secs * 1e3))
    } else {
        format!("{} us", sig3(secs * 1e6))
    }
}

/// What a timed call produced. It is returned from the timed closure so that
/// freeing it (hundreds of MB for the big SpGEMM products) happens outside
/// the timed region.
pub enum Output {
    /// GEMM wrote into the runner's own C buffer.
    Gemm,
    /// An f32 SpGEMM product.
    Csr32(CsrMatrix<f32>),
    /// An f64 SpGEMM product.
    Csr64(CsrMatrix<f64>),
    /// `closest_pairs`.
    Pairs(Vec<Pair>),
    /// f32 codes.
    Codes32(SparseCodes<f32>),
    /// f64 codes.
    Codes64(SparseCodes<f64>),
    /// A grid cut.
    Cut(GridCut),
    /// A network flow.
    Flow(NetworkFlow),
}

impl Output {
    /// One number a peer library computing the same thing reproduces, so the
    /// table can tell that both sides ran the same input: nnz of a SpGEMM
    /// product (no cancellation happens on the benchmark inputs), the largest `d2`
    /// among the closest pairs, the max-flow value. `None` where no such
    /// number is cheap and exact (GEMM, OMP).
    pub fn check(&self) -> Option<f64> {
        match self {
            Output::Csr32(c) => Some(c.nnz() as f64),
            Output::Csr64(c) => Some(c.nnz() as f64),
            Output::Pairs(p) => p.last().map(|p| p.d2 as f64),
            Output::Cut(c) => Some(c.flow as f64),
            Output::Flow(f) => Some(f.flow as f64),
            Output::Gemm | Output::Codes32(_) | Output::Codes64(_) => None,
        }
    }
}

/// A call of one primitive on one input, ready to be timed.
pub type Run<'a> = Box<dyn FnMut() -> Result<Output> + 'a>;

/// The call the contract times for `input` on `backend`, with everything else (the
/// input, GEMM's output buffer) prepared outside it:
///
/// | input | call |
/// | --- | --- |
/// | GEMM | `gemm` into a C buffer owned by the closure (the benchmark cases have `beta = 0`, so repeats do identical work) |
/// | SpGEMM | `spgemm(A, B)` |
/// | pairs | `closest_pairs(A, B, pairs_k)`, the contract's k = 100 |
/// | OMP | `encode(dict, signals, rule)` |
/// | grid / network | `grid_cut` / `network_flow` |
pub fn runner<'a>(backend: &'a dyn Primitives, input: &'a Input) -> Run<'a> {
    fn gemm<'a, T: trident::Scalar>(backend: &'a dyn Primitives, c: &'a GemmCase<T>) -> Run<'a>
    where
        dyn Primitives + 'a: trident::DenseGemm<T>,
    {
        let mut out = c.c.clone();
        Box::new(move || {
            trident::DenseGemm::<T>::gemm(
                backend,
                &c.params,
                c.a_ref(),
                c.b_ref(),
                c.c_mut(&mut out)?,
            )?;
            Ok(Output::Gemm)
        })
    }
    if let Some(c) = input.downcast_ref::<GemmCase<f32>>() {
        gemm(backend, c)
    } else if let Some(c) = input.downcast_ref::<GemmCase<f64>>() {
        gemm(backend, c)
    } else if let Some(c) = input.downcast_ref::<SpgemmCase<f32>>() {
        Box::new(move || trident::SparseGemm::<f32>::spgemm(backend, &c.a, &c.b).map(Output::Csr32))
    } else if let Some(c) = input.downcast_ref::<SpgemmCase<f64>>() {
        Box::new(move || trident::SparseGemm::<f64>::spgemm(backend, &c.a, &c.b).map(Output::Csr64))
    } else if let Some(c) = input.downcast_ref::<PairsCase>() {
        Box::new(move || {
            backend
                .closest_pairs(&c.a, &c.b, c.pairs_k)
                .map(Output::Pairs)
        })
    } else if let Some(c) = input.downcast_ref::<OmpCase<f32>>() {
        Box::new(move || {
            trident::SparseCoder::<f32>::encode(backend, &c.dict, c.signals_ref(), c.rule)
                .map(Output::Codes32)
        })
    } else if let Some(c) = input.downcast_ref::<OmpCase<f64>>() {
        Box::new(move || {
            trident::SparseCoder::<f64>::encode(backend, &c.dict, c.signals_ref(), c.rule)
                .map(Output::Codes64)
        })
    } else if let Some(g) = input.downcast_ref::<trident::GridGraph>() {
        Box::new(move || backend.grid_cut(g).map(Output::Cut))
    } else if let Some(g) = input.downcast_ref::<trident::FlowNetwork>() {
        Box::new(move || backend.network_flow(g).map(Output::Flow))
    } else {
        let why = format!("no bench runner for input {}", input.describe());
        Box::new(move || Err(Error::Unsupported(why.clone())))
    }
}

/// The backends compiled into this build that can run here, in preference
/// order, each with its one-line description. Those that cannot (no GPU, no
/// driver) are printed to stderr and left out: a bench machine without a GPU
/// still benches the CPU.
pub fn available_backends(names: &[&str]) -> Vec<Box<dyn Primitives>> {
    names
        .iter()
        .filter_map(|&name| match trident::backend_by_name(name) {
            Ok(b) => {
                eprintln!("backend {name}: {}", b.describe());
                Some(b)
            }
            Err(e) => {
                eprintln!("backend {name}: skipped ({e})");
                None
            }
        })
        .collect()
}
