//! The CUDA backend's errors and their conversions into
//! [`trident_core::Error`]: a failed driver call ([`DriverFailure`], through
//! [`driver_error`]) and a kernel NVRTC rejected ([`KernelCompileFailure`]),
//! both as [`Error::Backend`]. In a module of their own so that every other
//! module (device layer, staging pool, primitives) depends on them and they
//! depend on none.

use std::fmt;

use cudarc::driver::result::DriverError;
use cudarc::driver::sys::cudaError_enum;
use trident_core::Error;

/// A driver call that failed, with the operation it was part of.
#[derive(Debug)]
pub struct DriverFailure {
    /// What the backend was doing ("launch gemm_f32", "download").
    pub op: String,
    /// The driver's error code.
    pub err: DriverError,
}

impl fmt::Display for DriverFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA driver error in {}: {}", self.op, self.err)
    }
}

impl std::error::Error for DriverFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.err)
    }
}

/// A kernel source NVRTC rejected, with its log.
#[derive(Debug)]
pub struct KernelCompileFailure {
    /// The module (`kernels/<name>.cu`), with the entry point when compiled
    /// alone (`dense_gemm:gemm_nn_64x64_f32`).
    pub module: String,
    /// The target architecture, `sm_XX`.
    pub arch: String,
    /// NVRTC's error and log.
    pub log: String,
}

impl fmt::Display for KernelCompileFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NVRTC could not compile {} for {}:\n{}",
            module_label(&self.module),
            self.arch,
            self.log
        )
    }
}

impl std::error::Error for KernelCompileFailure {}

/// `kernels/<file>.cu`, naming the entry point of a one-entry module
/// (`file:entry`).
pub(crate) fn module_label(module: &str) -> String {
    match module.split_once(':') {
        Some((file, entry)) => format!("kernels/{file}.cu (entry point {entry} alone)"),
        None => format!("kernels/{module}.cu"),
    }
}

/// Maps a driver error to [`Error::Backend`] naming the operation: use as
/// `.map_err(driver_error("launch gemm_f32"))`.
pub fn driver_error(op: &'static str) -> impl Fn(DriverError) -> Error {
    move |err| {
        Error::Backend(Box::new(DriverFailure {
            op: op.to_string(),
            err,
        }))
    }
}

/// The error of a failed kernel launch, naming the kernel.
pub(crate) fn launch_error(kernel: &str, err: DriverError) -> Error {
    Error::Backend(Box::new(DriverFailure {
        op: format!("launch {kernel}"),
        err,
    }))
}

/// `true` when the driver ran out of device memory (the allocation paths
/// turn it into [`Error::OutOfMemory`] naming the buffer).
pub(crate) fn is_oom(e: &DriverError) -> bool {
    e.0 == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY
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
