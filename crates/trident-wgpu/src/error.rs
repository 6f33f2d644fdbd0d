//! The wgpu backend's error type and its conversions into
//! [`trident_core::Error`]: a failure wgpu reported ([`WgpuFailure`], as
//! [`Error::Backend`] through [`failure`]), and wgpu's out-of-memory errors
//! as [`Error::OutOfMemory`]. In a module of their own so that every other
//! module (context, buffers, pipelines, primitives) depends on them and they
//! depend on none.

use std::fmt;

use trident_core::Error;

/// A failure wgpu reported, with the operation it was part of.
#[derive(Debug)]
pub struct WgpuFailure {
    /// What the backend was doing (`"dense_gemm"`, `"download"`).
    pub op: String,
    /// wgpu's message.
    pub message: String,
}

impl fmt::Display for WgpuFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wgpu error in {}: {}", self.op, self.message)
    }
}

impl std::error::Error for WgpuFailure {}

/// Builds an [`Error::Backend`] from an operation name and a message.
pub fn failure(op: impl Into<String>, message: impl fmt::Display) -> Error {
    Error::Backend(Box::new(WgpuFailure {
        op: op.into(),
        message: message.to_string(),
    }))
}

/// Maps one error wgpu captured to a Trident error.
pub(crate) fn map_wgpu_error(op: &str, e: wgpu::Error) -> Error {
    match e {
        wgpu::Error::OutOfMemory { source } => Error::OutOfMemory {
            bytes: 0,
            detail: format!("wgpu device memory during {op}: {source}"),
        },
        other => failure(op, other),
    }
}

#[cfg(test)]
mod tests {
    /// The other modules depend on this one and it on none of them, so the
    /// crate's modules form no circle.
    #[test]
    fn imports_no_other_module_of_the_crate() {
        let needle = concat!("crate", "::");
        assert!(!include_str!("error.rs").contains(needle));
    }
}
