//! Finding out which backend of a chain serves each primitive: one tiny, valid
//! call per primitive and precision, offered down the chain the way real calls
//! are. Whether a backend is *available* says nothing about whether it serves
//! a given call (a wgpu backend on a software adapter, f64 on wgpu, a primitive
//! not written yet all answer [`Error::Unsupported`]), so asking is the only
//! report that cannot be wrong.

use std::sync::Arc;

use trident_core::{
    CsrMatrix, DenseGemm, Dictionary, Error, FlowArc, FlowNetwork, GemmParams, GridGraph, MatMut,
    MatRef, Neighbor, Primitives, Result, SparseCoder, SparseGemm, StopRule,
};

use crate::pick::Serving;

type Probe = fn(&dyn Primitives) -> Result<()>;

/// 1 x 1 probes of the scalar-typed primitives, for one scalar type.
macro_rules! scalar_probes {
    ($gemm:ident, $spgemm:ident, $encode:ident, $t:ty) => {
        fn $gemm(b: &dyn Primitives) -> Result<()> {
            let one: [$t; 1] = [1.0];
            let mut c: [$t; 1] = [0.0];
            DenseGemm::<$t>::gemm(
                b,
                &GemmParams::default(),
                MatRef::dense(&one, 1, 1)?,
                MatRef::dense(&one, 1, 1)?,
                MatMut::dense(&mut c, 1, 1)?,
            )
        }

        fn $spgemm(b: &dyn Primitives) -> Result<()> {
            let a = CsrMatrix::<$t>::from_triplets(1, 1, &[(0, 0, 1.0)])?;
            SparseGemm::<$t>::spgemm(b, &a, &a).map(drop)
        }

        fn $encode(b: &dyn Primitives) -> Result<()> {
            let d = Dictionary::<$t>::new(1, 1, vec![1.0])?;
            let x: [$t; 1] = [1.0];
            SparseCoder::<$t>::encode(b, &d, MatRef::dense(&x, 1, 1)?, StopRule::Sparsity(1))
                .map(drop)
        }
    };
}
scalar_probes!(gemm32, spgemm32, encode32, f32);
scalar_probes!(gemm64, spgemm64, encode64, f64);

/// The f32 and f64 NearestPairs probes: `nearest` and `within`, the
/// calls a backend may have in one type and not the other.
fn nearest32(b: &dyn Primitives) -> Result<()> {
    let p = [[0.0f32; 3]];
    let mut out = [Neighbor::default()];
    b.nearest(&p, &p, &mut out)?;
    b.within(&p, &p, 1.0, 1).map(drop)
}
fn nearest64(b: &dyn Primitives) -> Result<()> {
    let p = [[0.0f64; 3]];
    let mut out = [Neighbor::<f64>::default()];
    b.nearest(&p, &p, &mut out)?;
    b.within(&p, &p, 1.0, 1).map(drop)
}

fn max_flow(b: &dyn Primitives) -> Result<()> {
    let g = GridGraph::new_2d(1, 1, vec![1], vec![1], vec![0; 4])?;
    b.grid_cut(&g)?;
    let n = FlowNetwork::new(
        2,
        0,
        1,
        vec![FlowArc {
            from: 0,
            to: 1,
            cap: 1,
        }],
    )?;
    b.network_flow(&n).map(drop)
}

/// The probes, in report order.
const PROBES: [(&str, &str, Probe); 9] = [
    ("dense_gemm", "f32", gemm32),
    ("dense_gemm", "f64", gemm64),
    ("sparse_gemm", "f32", spgemm32),
    ("sparse_gemm", "f64", spgemm64),
    ("nearest_pairs", "f32", nearest32),
    ("nearest_pairs", "f64", nearest64),
    ("sparse_coder", "f32", encode32),
    ("sparse_coder", "f64", encode64),
    ("max_flow", "", max_flow),
];

/// Who serves each primitive on `chain`.
pub(crate) fn probe_all(chain: &[Arc<dyn Primitives>]) -> Vec<Serving> {
    PROBES
        .iter()
        .map(|&(primitive, scalar, probe)| {
            let mut skipped = Vec::new();
            let mut backend = Err("no backend in the chain".to_string());
            for b in chain {
                match probe(b.as_ref()) {
                    Err(Error::Unsupported(why)) => skipped.push((b.name(), why)),
                    Ok(()) => {
                        backend = Ok(b.name());
                        break;
                    }
                    // Calls would stop here too (only Unsupported hands on).
                    Err(e) => {
                        backend = Err(format!("{} fails a 1-element call: {e}", b.name()));
                        break;
                    }
                }
            }
            Serving {
                primitive,
                scalar,
                backend,
                skipped,
            }
        })
        .collect()
}
