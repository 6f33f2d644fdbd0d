//! What the backend needs of the machine, checked by [`CudaBackend::new`]
//! before it answers, so that a machine it cannot serve gets
//! [`Error::BackendUnavailable`] at construction (and the facade's call goes
//! to the next backend) instead of an error at a call's first kernel.
//!
//! Three numbers are compared ([`check_versions`], a pure function so the
//! rules are unit-tested with made-up versions): the driver's CUDA version
//! against the one NVRTC's cubins need, and the device's compute capability
//! against [`MIN_COMPUTE_CAPABILITY`]. Then one tiny kernel,
//! `kernels/probe.cu`, is compiled and loaded through the backend's own
//! module path (and its on-disk cache), which catches what the numbers do not
//! say: an NVRTC too old to know the device's architecture, a driver that
//! refuses the cubin.
//!
//! [`CudaBackend::new`]: crate::CudaBackend::new

use trident_core::{Error, Result};

use crate::CudaBackend;
use crate::device::KernelSource;
use crate::error::{DriverFailure, KernelCompileFailure};

/// The lowest compute capability the kernels run on. The dense GEMM's
/// kernels for all but the smallest products use `cp.async` and
/// `mma.sync` (TF32 m16n8k8, f64 m8n8k4), which need `sm_80`: NVRTC 13
/// rejects them for `sm_75` ("Feature 'cp.async' requires .target sm_80 or
/// higher"), and the GEMM has no other kernel for those shapes. (NVRTC 13
/// itself targets `sm_75` and later only.)
pub const MIN_COMPUTE_CAPABILITY: (i32, i32) = (8, 0);

/// The kernel compiled and loaded at construction, and its entry point.
pub(crate) const PROBE: KernelSource = KernelSource {
    name: "probe",
    source: include_str!("../kernels/probe.cu"),
    per_entry: false,
};

/// The probe's one entry point.
pub(crate) const PROBE_ENTRY: &str = "trident_probe";

/// The driver version (as `cuDriverGetVersion` reports it, `1000 * major +
/// 10 * minor`) that runs the cubins of NVRTC `major.minor`: any driver of
/// NVRTC's major release or later. Cubins (compiled for the device's own
/// `sm_XX`, no PTX left to JIT) of a later minor release load on an earlier
/// driver of the same major (CUDA's minor version compatibility); a driver
/// of an earlier major refuses them.
pub fn driver_needed(nvrtc: (i32, i32)) -> i32 {
    nvrtc.0.saturating_mul(1000)
}

/// `12040` as `12.4`.
pub fn cuda_version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The first Linux driver branch of a CUDA major release, for the advice
/// in the error (NVIDIA's CUDA release notes, "minimum required driver").
fn linux_driver_for(cuda_major: i32) -> Option<u32> {
    match cuda_major {
        11 => Some(450),
        12 => Some(525),
        13 => Some(580),
        _ => None,
    }
}

/// Checks the driver's CUDA version `driver` (`cuDriverGetVersion`), NVRTC's
/// `(major, minor)` (`nvrtcVersion`) and the device's compute capability
/// `cc`; `Err(BackendUnavailable)` says what was found, what is needed and
/// what to do, every failed rule in one message.
pub fn check_versions(driver: i32, nvrtc: (i32, i32), cc: (i32, i32)) -> Result<()> {
    let mut why = Vec::new();
    let need = driver_needed(nvrtc);
    if driver < need {
        let update = match linux_driver_for(nvrtc.0) {
            Some(branch) => format!("update the NVIDIA driver to {branch} or newer"),
            None => format!(
                "update the NVIDIA driver to one that supports CUDA {}",
                cuda_version_text(need)
            ),
        };
        why.push(format!(
            "CUDA driver {} ({driver}) is older than the {} that NVRTC {}.{} needs: {update}",
            cuda_version_text(driver),
            cuda_version_text(need),
            nvrtc.0,
            nvrtc.1,
        ));
    }
    if cc < MIN_COMPUTE_CAPABILITY {
        why.push(format!(
            "the GPU has compute capability {}.{}; the CUDA kernels need {}.{} or newer \
             (Ampere and later: they use cp.async and tensor-core mma.sync)",
            cc.0, cc.1, MIN_COMPUTE_CAPABILITY.0, MIN_COMPUTE_CAPABILITY.1,
        ));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(Error::BackendUnavailable(why.join("; ")))
    }
}

/// The driver's CUDA version (`cuDriverGetVersion`).
pub(crate) fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: an out-pointer to a local.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| {
            Error::BackendUnavailable(format!("the CUDA driver did not report its version: {e}"))
        })?;
    Ok(v)
}

/// NVRTC's `(major, minor)` (`nvrtcVersion`).
pub(crate) fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: out-pointers to locals.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| {
            Error::BackendUnavailable(format!("NVRTC did not report its version: {e:?}"))
        })?;
    Ok((major, minor))
}

/// Device `ordinal`'s compute capability, read before any context exists
/// (so a device the kernels cannot run on costs no context).
pub(crate) fn compute_capability(ordinal: usize) -> Result<(i32, i32)> {
    use cudarc::driver::result::device;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let fail = |e: cudarc::driver::DriverError| {
        Error::BackendUnavailable(format!(
            "could not read the compute capability of CUDA device {ordinal}: {e}"
        ))
    };
    let dev = device::get(ordinal as i32).map_err(fail)?;
    // SAFETY: `dev` is a device handle the driver just gave.
    let attr = |a| unsafe { device::get_attribute(dev, a) }.map_err(fail);
    Ok((
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ))
}

/// Compiles (or reads from the disk cache) and loads [`PROBE`] on `be`, the
/// last step of construction; a failure is `BackendUnavailable` naming the
/// device, the driver and NVRTC, with what the failure suggests.
pub(crate) fn probe(
    be: &CudaBackend,
    ordinal: usize,
    driver: i32,
    nvrtc: (i32, i32),
) -> Result<()> {
    let Err(e) = be.function(&PROBE, PROBE_ENTRY) else {
        return Ok(());
    };
    let hint = match &e {
        Error::Backend(b) if b.is::<KernelCompileFailure>() => {
            "NVRTC could not build for this GPU; a GPU newer than the NVRTC needs \
             the NVRTC of a later CUDA release"
        }
        Error::Backend(b) if b.is::<DriverFailure>() => {
            "the driver refused NVRTC's cubin; update the NVIDIA driver"
        }
        _ => "the probe kernel failed",
    };
    let (major, minor) = be.compute_capability();
    Err(Error::BackendUnavailable(format!(
        "CUDA device {ordinal} ({}, compute capability {major}.{minor}, CUDA driver {}) \
         cannot load a kernel compiled by NVRTC {}.{} ({hint}): {e}",
        be.device_name(),
        cuda_version_text(driver),
        nvrtc.0,
        nvrtc.1,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<()>) -> String {
        match r {
            Err(Error::BackendUnavailable(why)) => why,
            other => panic!("expected BackendUnavailable, got {other:?}"),
        }
    }

    #[test]
    fn a_driver_older_than_nvrtc_is_refused_naming_both() {
        let why = refused(check_versions(12040, (13, 0), (9, 0)));
        assert!(why.contains("CUDA driver 12.4 (12040)"), "{why}");
        assert!(why.contains("the 13.0 that NVRTC 13.0 needs"), "{why}");
        assert!(why.contains("580 or newer"), "{why}");
        assert!(!why.contains("compute capability"), "{why}");
        // The last 12.x driver is still too old for NVRTC 13.
        refused(check_versions(12090, (13, 2), (9, 0)));
        // NVRTC 12 on a CUDA 11 driver.
        let why = refused(check_versions(11080, (12, 8), (8, 0)));
        assert!(why.contains("525 or newer"), "{why}");
        // A major this code has no driver branch for says the CUDA version.
        let why = refused(check_versions(13020, (14, 0), (9, 0)));
        assert!(why.contains("one that supports CUDA 14.0"), "{why}");
    }

    #[test]
    fn a_driver_of_nvrtcs_major_or_later_is_enough() {
        // Exactly at the minimum.
        check_versions(13000, (13, 0), (9, 0)).unwrap();
        // A later minor of NVRTC on the major's first driver (cubins only).
        check_versions(13000, (13, 2), (9, 0)).unwrap();
        // An older NVRTC on a newer driver.
        check_versions(13010, (12, 8), (9, 0)).unwrap();
        check_versions(12040, (12, 9), (8, 6)).unwrap();
    }

    #[test]
    fn compute_capability_below_8_0_is_refused() {
        for cc in [(7, 0), (7, 5), (6, 1)] {
            let why = refused(check_versions(13000, (13, 0), cc));
            assert!(
                why.contains(&format!("compute capability {}.{}", cc.0, cc.1)),
                "{why}"
            );
            assert!(why.contains("need 8.0 or newer"), "{why}");
        }
        // Exactly at the minimum, and later devices.
        for cc in [(8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)] {
            check_versions(13000, (13, 0), cc).unwrap();
        }
    }

    #[test]
    fn every_failed_rule_is_in_the_one_message() {
        let why = refused(check_versions(12040, (13, 0), (7, 0)));
        assert!(why.contains("CUDA driver 12.4") && why.contains("compute capability 7.0"));
    }

    #[test]
    fn versions_print_as_major_dot_minor() {
        assert_eq!(cuda_version_text(12040), "12.4");
        assert_eq!(cuda_version_text(13000), "13.0");
        assert_eq!(cuda_version_text(12080), "12.8");
        assert_eq!(cuda_version_text(11020), "11.2");
        assert_eq!(driver_needed((13, 1)), 13000);
    }

    /// The minimum is sm_80 because of these instructions in the GEMM
    /// kernels, outside any `__CUDA_ARCH__` test: if they go (or get an
    /// older fallback), revisit [`MIN_COMPUTE_CAPABILITY`].
    #[test]
    fn the_minimum_follows_the_gemm_kernels() {
        let gemm = crate::dense_gemm::KERNEL.source;
        for needle in [
            "cp.async.cg.shared.global",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
        ] {
            assert!(gemm.contains(needle), "{needle}");
        }
        assert_eq!(MIN_COMPUTE_CAPABILITY, (8, 0));
    }

    #[test]
    fn the_probe_defines_its_entry_point() {
        assert!(
            PROBE
                .source
                .contains(&format!("extern \"C\" __global__ void {PROBE_ENTRY}("))
        );
    }
}
