//! The named cases `verify`, the conformance suite and the benches run.

use std::sync::Arc as Shared;

use trident_core::{
    Arc, CsrMatrix, Dictionary, Dir, FlowNetwork, GemmParams, GridGraph, Op, PRIMITIVES, Precision,
    Scalar, StopRule,
};

use super::*;

type Generator = dyn Fn(u64) -> Input + Send + Sync;

/// A named input: its name (as reports and `--case` spell it), the primitive
/// it exercises, and a generator. The input is made on demand by
/// [`Case::input`], so a list of large cases costs nothing until run.
#[derive(Clone)]
pub struct Case {
    /// E.g. `"spgemm-rmat-8-8"` or `"pairs-edge-duplicates"`.
    pub name: String,
    /// One of [`trident_core::PRIMITIVES`].
    pub primitive: &'static str,
    /// `true` for the hand-made edge cases (same at every size).
    pub edge: bool,
    generate: Shared<Generator>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("primitive", &self.primitive)
            .field("edge", &self.edge)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// A case from a generator taking the case's own seed.
    pub fn new(
        name: impl Into<String>,
        primitive: &'static str,
        edge: bool,
        generate: impl Fn(u64) -> Input + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            primitive,
            edge,
            generate: Shared::new(generate),
        }
    }

    /// The input under base seed `seed` (the generator gets
    /// [`case_seed`]`(seed, name)`): the same `(name, seed)` always gives the
    /// same bytes.
    pub fn input(&self, seed: u64) -> Input {
        (self.generate)(case_seed(seed, &self.name))
    }
}

fn add(
    v: &mut Vec<Case>,
    name: String,
    prim: &'static str,
    edge: bool,
    f: impl Fn(u64) -> Input + Send + Sync + 'static,
) {
    v.push(Case::new(name, prim, edge, f));
}

/// The cases of `primitive` (one of [`PRIMITIVES`]) at `size`: the random
/// SPEC-family cases at that size, then the edge cases. An unknown primitive
/// gives an empty list.
pub fn cases(primitive: &str, size: Size) -> Vec<Case> {
    match primitive {
        "dense_gemm" => gemm_cases(size),
        "sparse_gemm" => spgemm_cases(size),
        "nearest_pairs" => pairs_cases(size),
        "sparse_coder" => omp_cases(size),
        "max_flow" => flow_cases(size),
        _ => Vec::new(),
    }
}

/// Every case of every primitive at `size`, in [`PRIMITIVES`] order.
pub fn all_cases(size: Size) -> Vec<Case> {
    PRIMITIVES.iter().flat_map(|p| cases(p, size)).collect()
}

/// The case called `name` at either size or among [`spec_cases`].
pub fn find_case(name: &str) -> Option<Case> {
    all_cases(Size::Small)
        .into_iter()
        .chain(all_cases(Size::Large))
        .chain(spec_cases())
        .find(|c| c.name == name)
}

/// SPEC's benchmark cases at full size, named as SPEC names them, for the
/// benches. Far too big for the reference in tests: `verify` runs the
/// [`Size::Large`] versions instead. `flow-rmf` is genrmf(a = 32, b = 64,
/// c1 = 1, c2 = 10000): 65,536 nodes, about 330K arcs.
pub fn spec_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for n in [4096usize, 8192] {
        add(&mut v, format!("gemm-{n}"), "dense_gemm", false, move |s| {
            Input::Gemm32(gemm(n, s))
        });
    }
    add(
        &mut v,
        "spgemm-poisson2d-2048".into(),
        "sparse_gemm",
        false,
        |_| Input::Spgemm32(SpgemmCase::square(poisson2d(2048))),
    );
    add(
        &mut v,
        "spgemm-rmat-16-8".into(),
        "sparse_gemm",
        false,
        |s| Input::Spgemm32(SpgemmCase::square(rmat(16, 8, s))),
    );
    add(
        &mut v,
        "spgemm-uniform-1M-8".into(),
        "sparse_gemm",
        false,
        |s| Input::Spgemm32(SpgemmCase::square(uniform_rows(1 << 20, 1 << 20, 8, s))),
    );
    add(
        &mut v,
        "pairs-1M-400K".into(),
        "nearest_pairs",
        false,
        |s| Input::Pairs(pairs_uniform(1_000_000, 400_000, s)),
    );
    add(
        &mut v,
        "pairs-clustered".into(),
        "nearest_pairs",
        false,
        |s| Input::Pairs(pairs_clustered(1_000_000, 400_000, s)),
    );
    add(
        &mut v,
        "omp-64x256-k16".into(),
        "sparse_coder",
        false,
        |s| Input::Omp32(omp_dct(1_000_000, s)),
    );
    add(
        &mut v,
        "omp-256x1024-k32".into(),
        "sparse_coder",
        false,
        |s| Input::Omp32(omp_dct_256(100_000, s)),
    );
    for n in [512usize, 2048] {
        add(&mut v, format!("cut-{n}"), "max_flow", false, move |s| {
            Input::Grid(cut(n, s))
        });
    }
    add(&mut v, "flow-rmf".into(), "max_flow", false, |s| {
        Input::Network(genrmf(32, 64, 1, 10_000, s))
    });
    v
}

fn pick<T: Copy>(size: Size, small: T, large: T) -> T {
    match size {
        Size::Small => small,
        Size::Large => large,
    }
}

// ---------------------------------------------------------------- dense_gemm

fn params<T: Scalar>(
    op_a: Op,
    op_b: Op,
    alpha: f64,
    beta: f64,
    precision: Precision,
) -> GemmParams<T> {
    GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        op_a,
        op_b,
        precision,
    }
}

fn gemm_cases(size: Size) -> Vec<Case> {
    let p = "dense_gemm";
    let mut v = Vec::new();
    let n32 = pick(size, 64, 1024);
    let n64 = pick(size, 48, 512);
    add(&mut v, format!("gemm-f32-{n32}"), p, false, move |s| {
        Input::Gemm32(gemm(n32, s))
    });
    add(&mut v, format!("gemm-f64-{n64}"), p, false, move |s| {
        Input::Gemm64(gemm(n64, s))
    });
    add(&mut v, format!("gemm-tf32-{n32}"), p, false, move |s| {
        let prm = params(Op::N, Op::N, 1.0, 0.0, Precision::Tf32);
        Input::Gemm32(gemm_general(n32, n32, n32, prm, 0, s))
    });
    let (m, n, k) = pick(size, (37, 29, 41), (517, 389, 611));
    for (oa, ob, tag) in [
        (Op::T, Op::N, "tn"),
        (Op::N, Op::T, "nt"),
        (Op::T, Op::T, "tt"),
    ] {
        add(
            &mut v,
            format!("gemm-f32-{tag}-{m}x{n}x{k}"),
            p,
            false,
            move |s| {
                Input::Gemm32(gemm_general(
                    m,
                    n,
                    k,
                    params(oa, ob, -1.5, 0.75, Precision::Strict),
                    3,
                    s,
                ))
            },
        );
        add(
            &mut v,
            format!("gemm-f64-{tag}-{m}x{n}x{k}"),
            p,
            false,
            move |s| {
                Input::Gemm64(gemm_general(
                    m,
                    n,
                    k,
                    params(oa, ob, 0.5, -2.0, Precision::Strict),
                    2,
                    s,
                ))
            },
        );
    }
    // Edge cases: empty dimensions, k = 0 with and without beta, 1 x 1, dot and
    // outer products, alpha = 0, and beta = 0 over a NaN-filled padded C.
    let edges: [(&str, usize, usize, usize, f64, f64, usize); 9] = [
        ("m0", 0, 5, 4, 1.0, 0.0, 0),
        ("n0", 5, 0, 4, 1.0, 0.5, 0),
        ("k0-beta0", 4, 5, 0, 1.0, 0.0, 0),
        ("k0-beta", 4, 5, 0, 2.0, 0.5, 1),
        ("1x1", 1, 1, 1, 1.0, 0.0, 0),
        ("dot", 1, 1, 300, 1.0, 1.0, 0),
        ("outer", 40, 30, 1, -1.0, 0.0, 0),
        ("alpha0", 6, 7, 8, 0.0, 1.0, 2),
        ("beta0-nan-c", 9, 11, 13, 1.0, 0.0, 4),
    ];
    for (tag, m, n, k, alpha, beta, pad) in edges {
        add(&mut v, format!("gemm-edge-{tag}-f32"), p, true, move |s| {
            Input::Gemm32(gemm_general(
                m,
                n,
                k,
                params(Op::N, Op::N, alpha, beta, Precision::Strict),
                pad,
                s,
            ))
        });
        add(&mut v, format!("gemm-edge-{tag}-f64"), p, true, move |s| {
            Input::Gemm64(gemm_general(
                m,
                n,
                k,
                params(Op::T, Op::N, alpha, beta, Precision::Strict),
                pad,
                s,
            ))
        });
    }
    v
}

// --------------------------------------------------------------- sparse_gemm

fn csr<T: Scalar>(rows: usize, cols: usize, t: &[(u32, u32, f64)]) -> CsrMatrix<T> {
    let t: Vec<(u32, u32, T)> = t.iter().map(|&(r, c, v)| (r, c, T::from_f64(v))).collect();
    CsrMatrix::from_triplets(rows, cols, &t).expect("hand-made edge matrix is valid")
}

fn spgemm_cases(size: Size) -> Vec<Case> {
    let p = "sparse_gemm";
    let mut v = Vec::new();
    let grid = pick(size, 16, 512);
    let scale = pick(size, 8u32, 14);
    let rows = pick(size, 1024usize, 1 << 16);
    add(
        &mut v,
        format!("spgemm-poisson2d-{grid}"),
        p,
        false,
        move |_| Input::Spgemm32(SpgemmCase::square(poisson2d(grid))),
    );
    add(
        &mut v,
        format!("spgemm-poisson2d-{grid}-f64"),
        p,
        false,
        move |_| Input::Spgemm64(SpgemmCase::square(poisson2d(grid))),
    );
    add(
        &mut v,
        format!("spgemm-rmat-{scale}-8"),
        p,
        false,
        move |s| Input::Spgemm32(SpgemmCase::square(rmat(scale, 8, s))),
    );
    add(
        &mut v,
        format!("spgemm-rmat-{scale}-8-f64"),
        p,
        false,
        move |s| Input::Spgemm64(SpgemmCase::square(rmat(scale, 8, s))),
    );
    let rname = if rows >= 1024 && rows.is_multiple_of(1024) {
        format!("{}K", rows / 1024)
    } else {
        rows.to_string()
    };
    add(
        &mut v,
        format!("spgemm-uniform-{rname}-8"),
        p,
        false,
        move |s| Input::Spgemm32(SpgemmCase::square(uniform_rows(rows, rows, 8, s))),
    );
    let (m, k, n) = pick(size, (50, 80, 30), (2000, 3000, 1500));
    let dens = pick(size, 0.1, 0.005);
    add(
        &mut v,
        format!("spgemm-rect-{m}x{k}x{n}-f64"),
        p,
        false,
        move |s| {
            Input::Spgemm64(SpgemmCase {
                a: random_csr(m, k, dens, true, s),
                b: random_csr(k, n, dens, true, s ^ 1),
            })
        },
    );
    // Edge cases.
    add(&mut v, "spgemm-edge-empty-a".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase {
            a: CsrMatrix::zeros(0, 5).unwrap(),
            b: random_csr(5, 4, 0.5, false, s),
        })
    });
    add(&mut v, "spgemm-edge-k0".into(), p, true, |_| {
        Input::Spgemm64(SpgemmCase {
            a: CsrMatrix::zeros(3, 0).unwrap(),
            b: CsrMatrix::zeros(0, 4).unwrap(),
        })
    });
    add(&mut v, "spgemm-edge-no-entries".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase {
            a: CsrMatrix::zeros(4, 6).unwrap(),
            b: random_csr(6, 3, 0.5, false, s),
        })
    });
    add(&mut v, "spgemm-edge-1x1".into(), p, true, |_| {
        Input::Spgemm64(SpgemmCase::square(csr(1, 1, &[(0, 0, -3.0)])))
    });
    add(&mut v, "spgemm-edge-empty-rows".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase::square(random_csr(40, 40, 0.03, false, s)))
    });
    add(&mut v, "spgemm-edge-power-law-row".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase::square(power_law_row(300, 300, 7, s)))
    });
    add(&mut v, "spgemm-edge-explicit-zeros".into(), p, true, |_| {
        // Stored zeros produce stored (zero) products.
        let a = csr(
            3,
            3,
            &[
                (0, 0, 0.0),
                (0, 2, 1.0),
                (1, 1, 0.0),
                (2, 0, 2.0),
                (2, 2, 0.0),
            ],
        );
        Input::Spgemm64(SpgemmCase::square(a))
    });
    add(&mut v, "spgemm-edge-cancellation".into(), p, true, |_| {
        // C(0,0) = 1*1 + 1*(-1) = 0 must still be stored.
        let a = csr(1, 2, &[(0, 0, 1.0), (0, 1, 1.0)]);
        let b = csr(2, 2, &[(0, 0, 1.0), (1, 0, -1.0), (1, 1, 0.5)]);
        Input::Spgemm32(SpgemmCase { a, b })
    });
    add(&mut v, "spgemm-edge-outer-product".into(), p, true, |s| {
        // A column vector times a row vector: C dense from tiny operands.
        Input::Spgemm32(SpgemmCase {
            a: random_csr(60, 1, 1.0, false, s),
            b: random_csr(1, 70, 1.0, false, s ^ 1),
        })
    });
    v
}

// ------------------------------------------------------------- nearest_pairs

fn pc(
    a: Vec<trident_core::Point>,
    b: Vec<trident_core::Point>,
    knn_k: usize,
    pairs_k: usize,
) -> Input {
    Input::Pairs(PairsCase {
        a,
        b,
        knn_k,
        pairs_k,
    })
}

fn pairs_cases(size: Size) -> Vec<Case> {
    let p = "nearest_pairs";
    let mut v = Vec::new();
    let (na, nb) = pick(size, (2000usize, 1000usize), (200_000, 80_000));
    let tag = |n: usize| {
        if n >= 1000 && n.is_multiple_of(1000) {
            format!("{}K", n / 1000)
        } else {
            n.to_string()
        }
    };
    let (ta, tb) = (tag(na), tag(nb));
    add(
        &mut v,
        format!("pairs-uniform-{ta}-{tb}"),
        p,
        false,
        move |s| Input::Pairs(pairs_uniform(na, nb, s)),
    );
    add(
        &mut v,
        format!("pairs-clustered-{ta}-{tb}"),
        p,
        false,
        move |s| Input::Pairs(pairs_clustered(na, nb, s)),
    );
    add(&mut v, "pairs-edge-empty-a".into(), p, true, |s| {
        pc(vec![], uniform_points(5, s), 2, 3)
    });
    add(&mut v, "pairs-edge-single-b".into(), p, true, |s| {
        pc(uniform_points(20, s), vec![[1.0, 2.0, 3.0]], 1, 5)
    });
    add(&mut v, "pairs-edge-single-point".into(), p, true, |_| {
        pc(vec![[4.0, 5.0, 6.0]], vec![[4.0, 5.0, 6.0]], 1, 1)
    });
    add(&mut v, "pairs-edge-duplicates".into(), p, true, |s| {
        // B holds every point 3 times; A contains some of B's points exactly.
        let base = uniform_points(30, s);
        let b: Vec<_> = (0..3).flat_map(|_| base.iter().copied()).collect();
        let mut a = uniform_points(40, s ^ 1);
        a.extend_from_slice(&base[..10]);
        pc(a, b, 5, 20)
    });
    add(&mut v, "pairs-edge-equidistant".into(), p, true, |_| {
        // The origin's six axis neighbours at distance 1 (and the eight cube
        // corners at distance 3): exact ties resolved by index.
        let mut b = vec![];
        for d in 0..3 {
            for s in [1.0f32, -1.0] {
                let mut q = [0.0; 3];
                q[d] = s;
                b.push(q);
            }
        }
        for c in 0..8 {
            b.push([
                if c & 1 == 0 { 1.0 } else { -1.0 },
                if c & 2 == 0 { 1.0 } else { -1.0 },
                if c & 4 == 0 { 1.0 } else { -1.0 },
            ]);
        }
        pc(vec![[0.0; 3], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]], b, 10, 3)
    });
    add(&mut v, "pairs-edge-lattice".into(), p, true, |s| {
        // Queries at cell centres of an integer lattice: 8 equidistant points.
        let b = lattice_points(6, s);
        let a: Vec<_> = lattice_points(5, s ^ 1)
            .iter()
            .map(|q| [q[0] + 0.5, q[1] + 0.5, q[2] + 0.5])
            .collect();
        pc(a, b, 9, 50)
    });
    add(&mut v, "pairs-edge-k-equals-b".into(), p, true, |s| {
        pc(uniform_points(15, s), uniform_points(7, s ^ 1), 7, 15)
    });
    add(&mut v, "pairs-edge-k0".into(), p, true, |s| {
        pc(uniform_points(15, s), uniform_points(7, s ^ 1), 0, 0)
    });
    add(&mut v, "pairs-edge-pairs-k-above-a".into(), p, true, |s| {
        pc(uniform_points(6, s), uniform_points(9, s ^ 1), 3, 100)
    });
    add(&mut v, "pairs-edge-a-equals-b".into(), p, true, |s| {
        let a = uniform_points(50, s);
        pc(a.clone(), a, 4, 10)
    });
    add(
        &mut v,
        "pairs-edge-fractional-negative".into(),
        p,
        true,
        |s| {
            let f = |pts: Vec<trident_core::Point>| {
                pts.iter()
                    .map(|q| q.map(|c| (c - 5e5) * 1e-3 + 0.1))
                    .collect::<Vec<_>>()
            };
            pc(
                f(uniform_points(300, s)),
                f(uniform_points(200, s ^ 1)),
                6,
                40,
            )
        },
    );
    v
}

// -------------------------------------------------------------- sparse_coder

fn omp_cases(size: Size) -> Vec<Case> {
    let p = "sparse_coder";
    let mut v = Vec::new();
    let l32 = pick(size, 200usize, 20_000);
    let l64 = pick(size, 100usize, 5_000);
    add(
        &mut v,
        format!("omp-dct-64x256-k16-{l32}"),
        p,
        false,
        move |s| Input::Omp32(omp_dct(l32, s)),
    );
    add(
        &mut v,
        format!("omp-dct-64x256-k16-{l64}-f64"),
        p,
        false,
        move |s| Input::Omp64(omp_dct(l64, s)),
    );
    let lr = pick(size, 100usize, 5_000);
    add(
        &mut v,
        format!("omp-random-32x64-error-{lr}-f64"),
        p,
        false,
        move |s| {
            // Stop at 5% of the typical signal energy (each signal has norm ~ sqrt(6)).
            Input::Omp64(omp_random(32, 64, lr, 6, 0.05, StopRule::Error(0.3), s))
        },
    );
    add(
        &mut v,
        format!("omp-random-32x64-both-{lr}"),
        p,
        false,
        move |s| {
            Input::Omp32(omp_random(
                32,
                64,
                lr,
                6,
                0.05,
                StopRule::SparsityOrError {
                    sparsity: 4,
                    error: 0.3,
                },
                s,
            ))
        },
    );
    // Edge cases.
    add(&mut v, "omp-edge-signal-is-atom".into(), p, true, |_| {
        // Each signal is a scaled atom: one atom, (near) zero residual.
        let dict = dct_dictionary::<f32>(8, 16);
        let mut signals = Vec::new();
        for (t, j) in [0usize, 1, 17, 100, 255].into_iter().enumerate() {
            let scale = [1.0f32, -2.0, 0.5, 3.0, -1.0][t];
            signals.extend(dict.atom(j).iter().map(|x| x * scale));
        }
        Input::Omp32(OmpCase {
            dict,
            signals,
            count: 5,
            rule: StopRule::SparsityOrError {
                sparsity: 4,
                error: 1e-6,
            },
        })
    });
    add(
        &mut v,
        "omp-edge-signal-is-atom-f64".into(),
        p,
        true,
        |_| {
            let dict = dct_dictionary::<f64>(8, 16);
            let mut signals = dict.atom(42);
            signals.extend(dict.atom(3).iter().map(|x| -x));
            Input::Omp64(OmpCase {
                dict,
                signals,
                count: 2,
                rule: StopRule::SparsityOrError {
                    sparsity: 4,
                    error: 1e-20,
                },
            })
        },
    );
    add(&mut v, "omp-edge-zero-signal".into(), p, true, |s| {
        let mut c = omp_random::<f32>(16, 32, 3, 3, 0.0, StopRule::Sparsity(5), s);
        c.signals[16..32].iter_mut().for_each(|x| *x = 0.0);
        Input::Omp32(c)
    });
    add(&mut v, "omp-edge-no-signals".into(), p, true, |s| {
        Input::Omp64(omp_random(16, 32, 0, 3, 0.0, StopRule::Sparsity(5), s))
    });
    add(&mut v, "omp-edge-identity".into(), p, true, |s| {
        let mut d = vec![0.0f32; 64];
        (0..8).for_each(|i| d[i * 8 + i] = 1.0);
        let dict = Dictionary::new(8, 8, d).unwrap();
        let signals = dense_signals::<f32>(8, 4, s);
        Input::Omp32(OmpCase {
            dict,
            signals,
            count: 4,
            rule: StopRule::Error(0.0),
        })
    });
    add(&mut v, "omp-edge-sparsity-above-n".into(), p, true, |s| {
        // Sparsity 50 on an 8 x 20 dictionary: capped at min(n, K) = 8 atoms.
        let dict = random_dictionary::<f64>(8, 20, s);
        let signals = dense_signals::<f64>(8, 5, s ^ 1);
        Input::Omp64(OmpCase {
            dict,
            signals,
            count: 5,
            rule: StopRule::Sparsity(50),
        })
    });
    add(&mut v, "omp-edge-sparsity0".into(), p, true, |s| {
        Input::Omp32(omp_random(16, 32, 4, 3, 0.01, StopRule::Sparsity(0), s))
    });
    add(&mut v, "omp-edge-duplicate-atoms".into(), p, true, |s| {
        // Atom 10 duplicates atom 3: the exact tie goes to 3, after which 10 is
        // orthogonal to the residual.
        let base = random_dictionary::<f64>(16, 24, s);
        let mut d = base.data().to_vec();
        for i in 0..16 {
            d[i * 24 + 10] = d[i * 24 + 3];
        }
        let dict = Dictionary::new(16, 24, d).unwrap();
        let mut x = vec![0.0f64; 16];
        for (j, g) in [(3usize, 2.0f64), (7, -1.0), (20, 0.5)] {
            for i in 0..16 {
                x[i] += g * dict.data()[i * 24 + j];
            }
        }
        Input::Omp64(OmpCase {
            dict,
            signals: x,
            count: 1,
            rule: StopRule::SparsityOrError {
                sparsity: 3,
                error: 1e-18,
            },
        })
    });
    v
}

// ------------------------------------------------------------------ max_flow

fn grid2(h: usize, w: usize, source: Vec<i64>, sink: Vec<i64>, caps: Vec<i64>) -> Input {
    Input::Grid(GridGraph::new_2d(h, w, source, sink, caps).expect("hand-made grid is valid"))
}

fn net(nodes: usize, s: u32, t: u32, arcs: &[(u32, u32, i64)]) -> Input {
    let arcs = arcs
        .iter()
        .map(|&(from, to, cap)| Arc { from, to, cap })
        .collect();
    Input::Network(FlowNetwork::new(nodes, s, t, arcs).expect("hand-made network is valid"))
}

fn flow_cases(size: Size) -> Vec<Case> {
    let p = "max_flow";
    let mut v = Vec::new();
    let n = pick(size, 32usize, 512);
    let (ra, rb) = pick(size, (4usize, 4usize), (20, 20));
    add(&mut v, format!("cut-{n}"), p, false, move |s| {
        Input::Grid(cut(n, s))
    });
    add(&mut v, format!("flow-rmf-{ra}-{rb}"), p, false, move |s| {
        Input::Network(genrmf(ra, rb, 1, 100, s))
    });
    let (gd, gh, gw) = pick(size, (4usize, 6usize, 6usize), (32, 64, 64));
    add(
        &mut v,
        format!("grid3d-random-{gd}x{gh}x{gw}"),
        p,
        false,
        move |s| Input::Grid(random_grid(gd, gh, gw, true, 20, s)),
    );
    let (rn, rm) = pick(size, (60usize, 300usize), (5_000, 40_000));
    add(
        &mut v,
        format!("flow-random-{rn}-{rm}"),
        p,
        false,
        move |s| Input::Network(random_network(rn, rm, 50, s)),
    );
    // Edge cases.
    add(&mut v, "flow-edge-grid-empty".into(), p, true, |_| {
        grid2(0, 0, vec![], vec![], vec![])
    });
    add(&mut v, "flow-edge-grid-1x1".into(), p, true, |_| {
        grid2(1, 1, vec![5], vec![3], vec![0; 4])
    });
    add(&mut v, "flow-edge-grid-zero-caps".into(), p, true, |_| {
        grid2(3, 4, vec![0; 12], vec![0; 12], vec![0; 48])
    });
    add(
        &mut v,
        "flow-edge-grid-disconnected".into(),
        p,
        true,
        |_| {
            // Source links on the left column, sink links on the right, no arcs.
            let (h, w) = (4, 5);
            let source = (0..h * w).map(|v| if v % w == 0 { 7 } else { 0 }).collect();
            let sink = (0..h * w)
                .map(|v| if v % w == w - 1 { 7 } else { 0 })
                .collect();
            grid2(h, w, source, sink, vec![0; 4 * h * w])
        },
    );
    add(
        &mut v,
        "flow-edge-grid-uniform-ties".into(),
        p,
        true,
        |_| {
            // Every capacity equal: many minimum cuts, one canonical answer.
            let (h, w) = (5, 6);
            let nodes = h * w;
            let shape = GridGraph::new_2d(h, w, vec![0; nodes], vec![0; nodes], vec![0; 4 * nodes])
                .unwrap();
            let caps = (0..4 * nodes)
                .map(|i| {
                    if shape.neighbor(i % nodes, Dir::ALL[i / nodes]).is_some() {
                        2
                    } else {
                        0
                    }
                })
                .collect();
            grid2(h, w, vec![3; nodes], vec![3; nodes], caps)
        },
    );
    add(&mut v, "flow-edge-grid3d-1x1x2".into(), p, true, |_| {
        Input::Grid(
            GridGraph::new_3d(
                2,
                1,
                1,
                vec![9, 0],
                vec![0, 4],
                vec![0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 2],
            )
            .unwrap(),
        )
    });
    add(&mut v, "flow-edge-net-no-arcs".into(), p, true, |_| {
        net(2, 0, 1, &[])
    });
    add(&mut v, "flow-edge-net-direct".into(), p, true, |_| {
        net(2, 1, 0, &[(1, 0, 11)])
    });
    add(&mut v, "flow-edge-net-disconnected".into(), p, true, |_| {
        net(
            6,
            0,
            5,
            &[(0, 1, 3), (1, 2, 4), (2, 0, 1), (3, 4, 5), (4, 5, 6)],
        )
    });
    add(&mut v, "flow-edge-net-zero-caps".into(), p, true, |_| {
        net(4, 0, 3, &[(0, 1, 0), (1, 3, 5), (0, 2, 4), (2, 3, 0)])
    });
    add(
        &mut v,
        "flow-edge-net-parallel-selfloop".into(),
        p,
        true,
        |_| {
            net(
                4,
                0,
                3,
                &[
                    (0, 1, 2),
                    (0, 1, 3),
                    (1, 1, 9),
                    (1, 0, 4),
                    (1, 2, 1),
                    (1, 2, 1),
                    (2, 3, 10),
                    (0, 0, 5),
                    (3, 3, 1),
                    (2, 1, 7),
                ],
            )
        },
    );
    add(&mut v, "flow-edge-net-into-source".into(), p, true, |_| {
        // Arcs into s and out of t carry no flow.
        net(
            4,
            1,
            2,
            &[(0, 1, 5), (1, 3, 4), (3, 2, 3), (2, 0, 8), (2, 3, 2)],
        )
    });
    v
}
