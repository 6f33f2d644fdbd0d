//! # trident-wgpu
//!
//! The wgpu backend: WGSL compute shaders (from `shaders/`) on whatever adapter
//! wgpu finds: Vulkan, Metal, DX12, or llvmpipe on a machine without a GPU.
//!
//! What it is today: the adapter and device probe, so that the facade and
//! `verify` report it truthfully. What it is not yet: the primitives. Every
//! primitive answers [`Error::Unsupported`], which the facade's [`Trident`]
//! handle passes on to the next backend and `verify` reports as skipped.
//!
//! [`Trident`]: https://docs.rs/trident
#![warn(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use trident_core::{Backend, Error, Result};

/// A wgpu device and its queue.
pub struct WgpuBackend {
    info: wgpu::AdapterInfo,
    _device: wgpu::Device,
    _queue: wgpu::Queue,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("adapter", &self.info.name)
            .finish()
    }
}

impl WgpuBackend {
    /// Opens the highest-performance adapter wgpu finds (`WGPU_BACKEND` and the
    /// other wgpu environment variables are honoured).
    ///
    /// Errors with [`Error::BackendUnavailable`] when there is no adapter or no
    /// device can be created on it; never panics.
    pub fn new() -> Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| Error::BackendUnavailable(format!("no wgpu adapter: {e}")))?;
        let info = adapter.get_info();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("trident"),
            ..Default::default()
        }))
        .map_err(|e| {
            Error::BackendUnavailable(format!("adapter {} refused a device: {e}", info.name))
        })?;
        Ok(Self {
            info,
            _device: device,
            _queue: queue,
        })
    }

    /// What wgpu says about the adapter in use.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }
    fn describe(&self) -> String {
        format!(
            "wgpu on {} ({:?}, {:?}); primitives not implemented yet",
            self.info.name, self.info.backend, self.info.device_type
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine with no adapter the constructor must say so, not panic; with
    /// one (llvmpipe in CI) every primitive must answer Unsupported, not a wrong result.
    #[test]
    fn probe_never_panics() {
        match WgpuBackend::new() {
            Ok(b) => {
                println!("{}", b.describe());
                let a = trident_core::CsrMatrix::<f32>::zeros(1, 1).unwrap();
                let r = trident_core::SparseGemm::spgemm(&b, &a, &a);
                assert!(matches!(r, Err(Error::Unsupported(_))));
            }
            Err(e) => {
                println!("SKIPPED: {e}");
                assert!(matches!(e, Error::BackendUnavailable(_)));
            }
        }
    }
}
