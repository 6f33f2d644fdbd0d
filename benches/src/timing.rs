//! The timers the bench binaries share: the wall-time medians of
//! [`trident_testkit::timing`] (shared with `trident bench`), and (feature
//! `cuda`) medians of device time between two CUDA events on the backend's
//! stream, so that every program reports the same statistic the same way.

pub use trident_testkit::timing::*;

#[cfg(feature = "cuda")]
use trident_core::Result;

/// Median device time in ms of `f` over `n` runs (at least 1) after `warmups`
/// runs and at least [`WARM_S`] of them, measured by CUDA events recorded on
/// `be`'s stream around each run.
#[cfg(feature = "cuda")]
pub fn device(
    be: &trident_cuda::CudaBackend,
    n: usize,
    warmups: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    use cudarc::driver::sys::CUevent_flags;
    use trident_core::DeviceMemory;
    use trident_cuda::driver_error;
    let warm = std::time::Instant::now();
    let mut calls = 0;
    while calls < warmups || warm.elapsed().as_secs_f64() < WARM_S {
        f()?;
        be.synchronize()?;
        calls += 1;
    }
    let ctx = be.context();
    let event = || {
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver_error("event"))
    };
    let mut t = Vec::with_capacity(n.max(1));
    for _ in 0..n.max(1) {
        let (e0, e1) = (event()?, event()?);
        e0.record(be.stream())
            .map_err(driver_error("event record"))?;
        f()?;
        e1.record(be.stream())
            .map_err(driver_error("event record"))?;
        t.push(e0.elapsed_ms(&e1).map_err(driver_error("event elapsed"))? as f64);
    }
    Ok(median(t))
}
