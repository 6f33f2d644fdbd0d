//! Opening the adapter and device, the limits this backend asks for, and the
//! error scopes that catch wgpu's validation errors and device loss (turned
//! into [`trident_core::Error`] by [`crate::error`]) instead of a panic.
//!
//! wgpu reports most errors asynchronously: a bad bind group or a shader that
//! does not compile is not a `Result` of the call that made it but an error
//! delivered to the innermost *error scope*, or, without one, to the device's
//! uncaptured-error handler, whose default panics. So every public call of this
//! backend runs inside a `CallScope` (three scopes: validation, out of memory,
//! internal), and the device gets an uncaptured-error handler that only records
//! the message; a recorded message or a lost device fails the next call.

use std::sync::{Arc, Mutex};

use trident_core::{Error, Result};

use crate::error::{failure, map_wgpu_error};

/// Errors that reached no scope, and the device-lost reason: both shared with
/// wgpu's callbacks, which may run on any thread.
#[derive(Default, Debug)]
pub(crate) struct ErrorSink {
    uncaptured: Mutex<Option<String>>,
    lost: Mutex<Option<String>>,
}

impl ErrorSink {
    /// Installs the callbacks on `device` (replacing wgpu's panicking default).
    pub(crate) fn attach(self: &Arc<Self>, device: &wgpu::Device) {
        let sink = Arc::clone(self);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut slot) = sink.uncaptured.lock()
                && slot.is_none()
            {
                *slot = Some(e.to_string());
            }
        }));
        let sink = Arc::clone(self);
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut slot) = sink.lost.lock() {
                *slot = Some(format!("{reason:?}: {msg}"));
            }
        });
    }

    /// Fails when the device is lost or an error escaped every scope earlier
    /// (such an error is reported once, then cleared).
    pub(crate) fn check(&self, op: &str) -> Result<()> {
        let poisoned = || failure(op, "error-sink lock poisoned by a panic");
        if let Some(msg) = self.lost.lock().map_err(|_| poisoned())?.as_ref() {
            return Err(failure(op, format!("the wgpu device was lost ({msg})")));
        }
        if let Some(msg) = self.uncaptured.lock().map_err(|_| poisoned())?.take() {
            return Err(failure(op, format!("an earlier call left an error: {msg}")));
        }
        Ok(())
    }
}

/// The error scopes of one call: push with [`CallScope::open`], end with
/// [`CallScope::close`], which returns the first error wgpu captured.
///
/// Scopes are thread-local in wgpu, so a scope catches exactly the work this
/// thread recorded between open and close, even when other threads use the
/// same backend at the same time.
pub(crate) struct CallScope {
    // Popped in reverse order of pushing (wgpu requires it).
    internal: wgpu::ErrorScopeGuard,
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl CallScope {
    pub(crate) fn open(device: &wgpu::Device) -> Self {
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        Self {
            internal,
            oom,
            validation,
        }
    }

    pub(crate) fn close(self, op: &str) -> Result<()> {
        let v = pollster::block_on(self.validation.pop());
        let o = pollster::block_on(self.oom.pop());
        let i = pollster::block_on(self.internal.pop());
        match v.or(o).or(i) {
            Some(e) => Err(map_wgpu_error(op, e)),
            None => Ok(()),
        }
    }
}

/// How to open the backend; [`Default`] is what [`crate::WgpuBackend::new`] uses.
#[derive(Clone, Debug)]
pub struct WgpuOptions {
    /// Which wgpu backends to try; `None` reads `WGPU_BACKEND` (all when unset).
    /// `Some(wgpu::Backends::empty())` finds no adapter: the test for a machine
    /// without a GPU uses it.
    pub backends: Option<wgpu::Backends>,
    /// Use the `subgroups` feature when the adapter has it (`true` by default);
    /// `false` forces the shaders' fallback paths, which tests run as well.
    pub subgroups: bool,
}

impl Default for WgpuOptions {
    fn default() -> Self {
        Self {
            backends: None,
            subgroups: std::env::var_os("TRIDENT_WGPU_NO_SUBGROUPS").is_none(),
        }
    }
}

/// How long [`Context::wait`] polls before it blocks.
const SPIN: std::time::Duration = std::time::Duration::from_millis(20);

/// The opened device with what was negotiated for it.
pub(crate) struct Context {
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    pub(crate) subgroups: bool,
    pub(crate) errors: Arc<ErrorSink>,
    /// Idle buffers for [`crate::WgpuBackend::alloc_uninit`].
    pub(crate) pool: Arc<crate::buffer::Pool>,
    /// Mapped buffers that host copies go through (`staging.rs`).
    pub(crate) staging: crate::staging::Staging,
}

/// Held while a device is opened: one at a time per process. On the H100
/// machine's NVIDIA Vulkan driver, the trident-wgpu test binary, whose 16
/// test threads each open devices at once, hung in every one of four runs
/// (all threads waiting on futexes, the driver's among them).
static OPENING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Context {
    pub(crate) fn open(opts: &WgpuOptions) -> Result<Self> {
        // A panic elsewhere while opening leaves nothing to repair.
        let _one = OPENING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if let Some(b) = opts.backends {
            desc.backends = b;
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| Error::BackendUnavailable(format!("no wgpu adapter: {e}")))?;
        let info = adapter.get_info();
        // Ask for everything the adapter offers (not wgpu's portable defaults):
        // the storage-binding and buffer sizes bound the problem sizes, and the
        // workgroup-memory size bounds the GEMM and SpGEMM tiles (48 KiB on
        // NVIDIA's Vulkan, 32 KiB or less on llvmpipe).
        let limits = adapter.limits();
        let subgroups = opts.subgroups && adapter.features().contains(wgpu::Features::SUBGROUP);
        let mut required_features = if subgroups {
            wgpu::Features::SUBGROUP
        } else {
            wgpu::Features::empty()
        };
        // The GPU clock of `profile.rs`, where the adapter has one.
        let stamps =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        if adapter.features().contains(stamps) {
            required_features |= stamps;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("trident"),
            required_features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| {
            Error::BackendUnavailable(format!("adapter {} refused a device: {e}", info.name))
        })?;
        let errors = Arc::new(ErrorSink::default());
        errors.attach(&device);
        let limits = device.limits();
        let pool = Arc::new(crate::buffer::Pool::new(crate::buffer::default_pool_limit(
            &info,
        )));
        Ok(Self {
            pool,
            staging: crate::staging::Staging::for_adapter(&info),
            info,
            device,
            queue,
            limits,
            subgroups,
            errors,
        })
    }

    /// The names the shader preprocessor defines on this device
    /// (`pipeline.rs`).
    pub(crate) fn defines(&self) -> Vec<&'static str> {
        let mut d = Vec::new();
        if self.subgroups {
            d.push("SUBGROUPS");
            if self.info.subgroup_min_size == 32 && self.info.subgroup_max_size == 32 {
                d.push("SUBGROUP32");
            }
        }
        d
    }

    /// Blocks until all submitted work is done; a wgpu poll failure (device
    /// lost, timeout) is an [`Error::Backend`].
    ///
    /// On a GPU it first polls in a loop for up to [`SPIN`]: a blocking wait
    /// sleeps in the driver, and waking up cost ~0.5 ms a wait on the H100
    /// through Vulkan (an SpGEMM waits once mid-call for nnz(C); its GPU
    /// work took 2.1 ms of a 2.9 ms call on the GPU clock). CUDA's default
    /// synchronize spins the same way. On a CPU adapter (llvmpipe) the
    /// waiting thread would take a core from the rasterizer, so it blocks.
    pub(crate) fn wait(&self, op: &str) -> Result<()> {
        self.wait_until(op, None, || false)
    }

    /// Blocks until `state` (set by a map callback) leaves `PENDING`, with
    /// the spin of [`Context::wait`] and then a blocking wait for the
    /// submission `after` (all submitted work when `None`); `Err` when the
    /// map failed.
    pub(crate) fn wait_flag(
        &self,
        op: &str,
        state: &std::sync::atomic::AtomicU8,
        after: Option<&wgpu::SubmissionIndex>,
    ) -> Result<()> {
        use std::sync::atomic::Ordering;
        let pending = || state.load(Ordering::Acquire) == crate::staging::PENDING;
        if pending() {
            self.wait_until(op, after.cloned(), || !pending())?;
        }
        match state.load(Ordering::Acquire) {
            crate::staging::MAPPED => Ok(()),
            crate::staging::FAILED => Err(failure(op, "mapping a staging buffer failed")),
            _ => Err(failure(op, "a staging buffer's map callback never ran")),
        }
    }

    /// Polls (spinning on a GPU for up to [`SPIN`]) until `done()` or the
    /// queue is empty, then blocks until submission `after` (the last one
    /// when `None`) has finished and its callbacks have run.
    fn wait_until(
        &self,
        op: &str,
        after: Option<wgpu::SubmissionIndex>,
        done: impl Fn() -> bool,
    ) -> Result<()> {
        if self.info.device_type != wgpu::DeviceType::Cpu {
            let t = std::time::Instant::now();
            while t.elapsed() < SPIN {
                let status = self
                    .device
                    .poll(wgpu::PollType::Poll)
                    .map_err(|e| failure(op, e))?;
                if status.is_queue_empty() || done() {
                    return self.errors.check(op);
                }
                std::hint::spin_loop();
            }
        }
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: after,
                timeout: None,
            })
            .map_err(|e| failure(op, e))?;
        self.errors.check(op)
    }
}
