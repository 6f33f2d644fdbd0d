//! Names of backends and primitives as enums: one list each, so that the
//! facade, the CLI and the verify runner do not keep their own string lists.

use std::fmt;

/// A backend of Trident. [`BackendKind::ALL`] is the preference order of
/// `Trident::new` (fastest first; the reference is the last resort).
/// Non-exhaustive: backends are added (a `match` needs a `_` arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum BackendKind {
    /// NVIDIA GPUs through CUDA (`trident-cuda`).
    Cuda,
    /// Vulkan/Metal/DX12 GPUs through wgpu (`trident-wgpu`).
    Wgpu,
    /// All CPU cores (`trident-rayon`).
    Rayon,
    /// f64 inside, one thread: defines what is correct (`trident-reference`).
    Reference,
}

impl BackendKind {
    /// Every backend, in preference order.
    pub const ALL: [BackendKind; 4] = [Self::Cuda, Self::Wgpu, Self::Rayon, Self::Reference];

    /// The name `TRIDENT_BACKEND`, `verify --backend` and `Backend::name` use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cuda => "cuda",
            Self::Wgpu => "wgpu",
            Self::Rayon => "rayon",
            Self::Reference => "reference",
        }
    }

    /// The cargo feature of the `trident` crate that compiles it in; `None`
    /// for the reference, which is always there.
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            Self::Reference => None,
            other => Some(other.name()),
        }
    }

    /// The backend called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One of the five primitives, in the order reports list them.
/// Non-exhaustive: primitives are added (a `match` needs a `_` arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Primitive {
    /// [`crate::DenseGemm`].
    DenseGemm,
    /// [`crate::SparseGemm`].
    SparseGemm,
    /// [`crate::NearestPairs`].
    NearestPairs,
    /// [`crate::SparseCoder`].
    SparseCoder,
    /// [`crate::MaxFlow`].
    MaxFlow,
}

impl Primitive {
    /// Every primitive, in report order.
    pub const ALL: [Primitive; 5] = [
        Self::DenseGemm,
        Self::SparseGemm,
        Self::NearestPairs,
        Self::SparseCoder,
        Self::MaxFlow,
    ];

    /// The name `verify --primitive` and reports use (`"dense_gemm"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::DenseGemm => "dense_gemm",
            Self::SparseGemm => "sparse_gemm",
            Self::NearestPairs => "nearest_pairs",
            Self::SparseCoder => "sparse_coder",
            Self::MaxFlow => "max_flow",
        }
    }

    /// The primitive called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in BackendKind::ALL {
            assert_eq!(BackendKind::from_name(k.name()), Some(k));
        }
        for p in Primitive::ALL {
            assert_eq!(Primitive::from_name(p.name()), Some(p));
        }
        assert_eq!(BackendKind::from_name("metal"), None);
        assert_eq!(crate::PRIMITIVES.len(), Primitive::ALL.len());
    }
}
