//! `serde` for the value types (feature `serde`).
//!
//! Plain data (enums, [`crate::Pair`], [`crate::SparseCodes`], flow results,
//! ...) derive both traits where they are defined. The types that are valid by
//! construction ([`CsrMatrix`], [`Dictionary`], [`GridGraph`],
//! [`FlowNetwork`]) serialize their fields as they are, but deserialize
//! through the `*Parts` mirrors here and their checked constructors, so a
//! file cannot smuggle in a matrix with unsorted indices or a network with a
//! negative capacity: that is a deserialization error carrying the
//! constructor's message. Deserialized matrices are held to the input rules
//! ([`CsrMatrix::new`]: finite values).
//!
//! Enum names are the ones reports use: `"dense_gemm"`, `"cuda"`, `"strict"`.
//! [`MatRef`] serializes (as `{rows, cols, data}`, `data` packed row-major
//! without the padding of `ld`) but does not deserialize: it borrows, and the
//! owned form of a dense matrix is the caller's `Vec`.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::{CsrMatrix, Dictionary, Error, FlowArc, FlowNetwork, GridGraph, MatRef, Scalar};

/// The fields of a [`CsrMatrix`], unchecked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CsrParts<T> {
    rows: usize,
    cols: usize,
    offsets: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> TryFrom<CsrParts<T>> for CsrMatrix<T> {
    type Error = Error;
    fn try_from(p: CsrParts<T>) -> Result<Self, Error> {
        CsrMatrix::new(p.rows, p.cols, p.offsets, p.indices, p.values)
    }
}

/// The fields of a [`Dictionary`], unchecked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DictionaryParts<T> {
    n: usize,
    atoms: usize,
    data: Vec<T>,
}

impl<T: Scalar> TryFrom<DictionaryParts<T>> for Dictionary<T> {
    type Error = Error;
    fn try_from(p: DictionaryParts<T>) -> Result<Self, Error> {
        Dictionary::new(p.n, p.atoms, p.data)
    }
}

/// The fields of a [`GridGraph`], unchecked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GridParts {
    depth: usize,
    height: usize,
    width: usize,
    three_d: bool,
    source: Vec<i64>,
    sink: Vec<i64>,
    caps: Vec<i64>,
}

impl TryFrom<GridParts> for GridGraph {
    type Error = Error;
    fn try_from(p: GridParts) -> Result<Self, Error> {
        if p.three_d {
            GridGraph::new_3d(p.depth, p.height, p.width, p.source, p.sink, p.caps)
        } else if p.depth != 1 {
            Err(Error::arg(
                "depth",
                format!("a 2-D grid has depth 1, not {}", p.depth),
            ))
        } else {
            GridGraph::new_2d(p.height, p.width, p.source, p.sink, p.caps)
        }
    }
}

/// The fields of a [`FlowNetwork`], unchecked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetworkParts {
    nodes: usize,
    source: u32,
    sink: u32,
    arcs: Vec<FlowArc>,
}

impl TryFrom<NetworkParts> for FlowNetwork {
    type Error = Error;
    fn try_from(p: NetworkParts) -> Result<Self, Error> {
        FlowNetwork::new(p.nodes, p.source, p.sink, p.arcs)
    }
}

impl<T: Copy + Serialize> Serialize for MatRef<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The rows of the view back to back, skipping the padding.
        struct Packed<'v, 'a, T>(&'v MatRef<'a, T>);
        impl<T: Copy + Serialize> Serialize for Packed<'_, '_, T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let m = self.0;
                s.collect_seq((0..m.rows()).flat_map(|i| m.row(i).iter()))
            }
        }
        let mut st = s.serialize_struct("MatRef", 3)?;
        st.serialize_field("rows", &self.rows())?;
        st.serialize_field("cols", &self.cols())?;
        st.serialize_field("data", &Packed(self))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    fn round_trip<T>(v: &T) -> T
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        let text = serde_json::to_string(v).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, v, "{text}");
        back
    }

    use serde::{Deserialize, Serialize};

    #[test]
    fn value_types_round_trip() {
        let m = CsrMatrix::from_triplets(2, 3, &[(0, 2, 1.5f64), (1, 0, -2.0)]).unwrap();
        round_trip(&m);
        round_trip(&CsrMatrix::<f32>::from_triplets(0, 0, &[]).unwrap());
        round_trip(&Dictionary::normalize(2, 2, vec![3.0f32, 0.0, 4.0, 2.0]).unwrap());
        round_trip(&SparseCodes::<f64> {
            offsets: vec![0, 2, 2],
            atoms: vec![3, 1],
            coefs: vec![0.5, -1.0],
            residual_norm2: vec![1e-9, 4.0],
        });
        round_trip(
            &GridGraph::new_2d(1, 2, vec![3, 0], vec![0, 4], vec![2, 0, 0, 1, 0, 0, 0, 0]).unwrap(),
        );
        round_trip(&GridGraph::new_3d(2, 1, 1, vec![1, 0], vec![0, 1], vec![0; 12]).unwrap());
        round_trip(
            &FlowNetwork::new(
                3,
                0,
                2,
                vec![
                    FlowArc {
                        from: 0,
                        to: 1,
                        cap: 5,
                    },
                    FlowArc {
                        from: 1,
                        to: 2,
                        cap: 3,
                    },
                ],
            )
            .unwrap(),
        );
        round_trip(&GridCut {
            flow: 3,
            source_side: vec![true, false],
        });
        round_trip(&NetworkFlow {
            flow: 3,
            source_side: vec![true, true, false],
            arc_flow: vec![3, 3],
        });
        round_trip(&Pair {
            a: 1,
            b: 2,
            d2: 0.25,
        });
        round_trip(&Neighbor { index: 7, d2: 1.0 });
        let p: Point = [1.0, -2.0, 3.5];
        round_trip(&p);
        round_trip(&GemmParams::<f32> {
            alpha: 2.0,
            beta: 0.5,
            op_a: Op::T,
            op_b: Op::N,
            precision: Precision::Tf32,
        });
        round_trip(&GemmDims { m: 1, n: 2, k: 3 });
        for r in [
            StopRule::Sparsity(4),
            StopRule::Error(1e-6),
            StopRule::SparsityOrError {
                sparsity: 2,
                error: 0.1,
            },
        ] {
            round_trip(&r);
        }
        for d in Dir::ALL {
            round_trip(&d);
        }
        for k in BackendKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
            round_trip(&k);
        }
        for p in Primitive::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
            round_trip(&p);
        }
        assert_eq!(serde_json::to_value(Precision::Strict).unwrap(), "strict");
        assert_eq!(serde_json::to_value(Precision::Tf32x3).unwrap(), "tf32x3");
        round_trip(&Precision::Tf32x3);
    }

    #[test]
    fn invalid_values_are_rejected_with_the_constructors_message() {
        // Unsorted column indices.
        let bad = r#"{"rows":1,"cols":2,"offsets":[0,2],"indices":[1,0],"values":[1.0,1.0]}"#;
        let e = serde_json::from_str::<CsrMatrix<f32>>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("indices"), "{e}");
        // A column index out of range.
        let bad = r#"{"rows":1,"cols":1,"offsets":[0,1],"indices":[1],"values":[1.0]}"#;
        assert!(serde_json::from_str::<CsrMatrix<f64>>(bad).is_err());
        // A dictionary column that is not unit norm.
        let bad = r#"{"n":1,"atoms":1,"data":[2.0]}"#;
        assert!(serde_json::from_str::<Dictionary<f64>>(bad).is_err());
        // A negative capacity; s == t.
        let bad = r#"{"nodes":2,"source":0,"sink":1,"arcs":[{"from":0,"to":1,"cap":-1}]}"#;
        let e = serde_json::from_str::<FlowNetwork>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative") || e.contains("-1"), "{e}");
        let bad = r#"{"nodes":2,"source":1,"sink":1,"arcs":[]}"#;
        assert!(serde_json::from_str::<FlowNetwork>(bad).is_err());
        // A 2-D grid with depth 2, a grid with a plane too short.
        let bad = r#"{"depth":2,"height":1,"width":1,"three_d":false,"source":[0],"sink":[0],"caps":[0,0,0,0]}"#;
        assert!(serde_json::from_str::<GridGraph>(bad).is_err());
        let bad = r#"{"depth":1,"height":1,"width":1,"three_d":false,"source":[0],"sink":[0],"caps":[0]}"#;
        assert!(serde_json::from_str::<GridGraph>(bad).is_err());
        // Unknown fields are an error, not silently dropped.
        let bad = r#"{"rows":0,"cols":0,"offsets":[0],"indices":[],"values":[],"extra":1}"#;
        assert!(serde_json::from_str::<CsrMatrix<f32>>(bad).is_err());
    }

    #[test]
    fn mat_ref_serializes_packed_rows() {
        let a = [1.0f32, 2.0, 9.0, 3.0, 4.0];
        let m = MatRef::new(&a, 2, 2, 3).unwrap();
        assert_eq!(
            serde_json::to_value(m).unwrap(),
            serde_json::json!({"rows": 2, "cols": 2, "data": [1.0, 2.0, 3.0, 4.0]})
        );
    }
}
