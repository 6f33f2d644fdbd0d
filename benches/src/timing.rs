//! The timers the bench binaries share: medians of wall time, and (feature
//! `cuda`) of device time between two CUDA events on the backend's stream, so
//! that every program reports the same statistic the same way.

use trident_core::Result;

/// The median of `v` (the upper one of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds of untimed calls before a GPU timing: an idle H100 sits at 345
/// MHz and takes a moment to clock up (measured in the wgpu bench: first
/// calls up to 5x slower on the GPU clock than later ones).
pub const WARM_S: f64 = 0.3;

/// Median wall time in ms of `f` over `n` runs (at least 1) after one warm-up;
/// `f` must wait for its own work to finish.
pub fn wall(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(n.max(1));
    for _ in 0..n.max(1) {
        let s = std::time::Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(t))
}

/// Median wall times in ms of `f` and `g` over `n` runs each (at least 1),
/// alternating f, g, f, g, ... after one warm-up of each, so that both meet
/// the same machine state: when one call follows another kind of work (a
/// rayon call leaves its workers spinning for a while), both pay for it
/// alike. `f` and `g` must wait for their own work.
pub fn wall_pair(
    n: usize,
    mut f: impl FnMut() -> Result<()>,
    mut g: impl FnMut() -> Result<()>,
) -> Result<(f64, f64)> {
    f()?;
    g()?;
    let (mut tf, mut tg) = (Vec::with_capacity(n.max(1)), Vec::with_capacity(n.max(1)));
    for _ in 0..n.max(1) {
        let s = std::time::Instant::now();
        f()?;
        tf.push(s.elapsed().as_secs_f64() * 1e3);
        let s = std::time::Instant::now();
        g()?;
        tg.push(s.elapsed().as_secs_f64() * 1e3);
    }
    Ok((median(tf), median(tg)))
}

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
