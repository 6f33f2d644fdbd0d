//! The backend's construction never panics: on a machine without a driver or a
//! device it answers `BackendUnavailable`; with one it describes itself.

use trident_core::{Backend, DeviceMemory, Error};
use trident_cuda::CudaBackend;

#[test]
fn new_reports_availability_without_panicking() {
    match CudaBackend::new(0) {
        Err(Error::BackendUnavailable(why)) => {
            assert!(!why.is_empty());
            println!("SKIPPED: no CUDA ({why})");
        }
        Err(e) => panic!("expected BackendUnavailable or a backend, got {e}"),
        Ok(be) => {
            assert_eq!(be.name(), "cuda");
            assert!(be.describe().contains("sm_"));
            // Round trip through the device layer.
            let host: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
            let buf = be.upload(&host).unwrap();
            assert_eq!(be.buffer_len(&buf), 1000);
            let mut back = vec![0u32; 1000];
            be.download(&buf, &mut back).unwrap();
            assert_eq!(back, host);
            let z = be.alloc_zeroed::<f64>(17).unwrap();
            let mut zb = vec![1.0f64; 17];
            be.download(&z, &mut zb).unwrap();
            assert!(zb.iter().all(|&v| v == 0.0));
            let empty = be.upload::<f32>(&[]).unwrap();
            assert_eq!(be.buffer_len(&empty), 0);
            let mut wrong = vec![0u32; 3];
            assert!(matches!(
                be.download(&buf, &mut wrong),
                Err(Error::DimensionMismatch { .. })
            ));
            // An impossible allocation is a typed error, not an abort.
            match be.alloc::<u8>(1usize << 50, "huge") {
                Err(Error::OutOfMemory { bytes, detail }) => {
                    assert_eq!(bytes, 1u64 << 50);
                    assert!(detail.contains("huge"));
                }
                other => panic!("expected OutOfMemory, got {other:?}"),
            }
            // ... and the backend is still usable afterwards.
            let again = be.upload(&host).unwrap();
            let mut back = vec![0u32; 1000];
            be.download(&again, &mut back).unwrap();
            assert_eq!(back, host);
        }
    }
}

#[test]
fn a_missing_device_ordinal_is_unavailable() {
    match CudaBackend::new(1 << 20) {
        Err(Error::BackendUnavailable(_)) => {}
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}

/// On a GPU the backend supports, construction's checks (driver, NVRTC,
/// compute capability) and its probe kernel pass. Where CUDA is unavailable
/// this says SKIPPED with the reason, unless `TRIDENT_REQUIRE_BACKENDS` names
/// `cuda` (or `all`): then the reason is the failure.
#[test]
fn construction_checks_and_probe_pass_on_a_supported_gpu() {
    let required = std::env::var(trident_testkit::conformance::REQUIRE_ENV)
        .is_ok_and(|v| v.split(',').any(|n| matches!(n.trim(), "cuda" | "all")));
    match CudaBackend::new(0) {
        Ok(be) => {
            assert!(be.compute_capability() >= trident_cuda::MIN_COMPUTE_CAPABILITY);
            println!("construction checks and probe passed: {}", be.describe());
        }
        Err(Error::BackendUnavailable(why)) if !required => println!("SKIPPED: no CUDA ({why})"),
        Err(e) => panic!("constructing the CUDA backend failed: {e}"),
    }
}
