//! Medians of wall time, shared by the bench programs in `benches/` and
//! `trident bench`, so that every program reports the same statistic the same
//! way. (The CUDA-event timer stays with the bench programs, which link the
//! CUDA backend.)

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

/// Median wall times in ms of each of `fs`, called in turn (f, g, h, f, g,
/// h, ...) after one warm-up of each, each timed call after a pause of
/// [`SETTLE`], so that every call starts from the same quiet machine: a
/// rayon call leaves its workers spinning for a while, and a CUDA call timed
/// right after one read up to 1.2x slower (on the H100 machine). Each is timed at
/// least `n` times, and more for short calls (up to [`SHORT_ROUNDS`]
/// rounds, about [`SHORT_MS`] of the slowest per call): a sub-millisecond
/// median over 5 calls moved by 30% between runs. Each `f` must wait for its
/// own work.
pub fn wall_rounds(n: usize, fs: &mut [&mut dyn FnMut() -> Result<()>]) -> Result<Vec<f64>> {
    let mut slowest = 0f64;
    for f in fs.iter_mut() {
        let s = std::time::Instant::now();
        f()?;
        slowest = slowest.max(s.elapsed().as_secs_f64() * 1e3);
    }
    let rounds = if slowest > 0.0 {
        ((SHORT_MS / slowest).ceil() as usize).clamp(n.max(1), SHORT_ROUNDS.max(n))
    } else {
        SHORT_ROUNDS.max(n)
    };
    let mut t = vec![Vec::with_capacity(rounds); fs.len()];
    for _ in 0..rounds {
        for (f, t) in fs.iter_mut().zip(t.iter_mut()) {
            std::thread::sleep(SETTLE);
            let s = std::time::Instant::now();
            f()?;
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(t.into_iter().map(median).collect())
}

/// The pause before each call [`wall_rounds`] times.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(5);
/// Most rounds [`wall_rounds`] adds for short calls.
pub const SHORT_ROUNDS: usize = 200;
/// Wall time in ms that [`wall_rounds`] aims at per timed function.
pub const SHORT_MS: f64 = 20.0;

/// Median wall time in seconds of `call` over `reps` runs (at least 1) after
/// one untimed run; `setup` makes each run's argument outside the timed
/// region (a fresh output, say), and results are kept from being optimized
/// away.
pub fn median_secs<S, R>(
    reps: usize,
    mut setup: impl FnMut() -> S,
    mut call: impl FnMut(S) -> R,
) -> f64 {
    std::hint::black_box(call(setup()));
    let times = (0..reps.max(1))
        .map(|_| {
            let s = setup();
            let t = std::time::Instant::now();
            std::hint::black_box(call(s));
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(times)
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_is_the_upper_middle() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn median_secs_runs_setup_outside_and_reps_times() {
        let (mut setups, mut calls) = (0, 0);
        let s = super::median_secs(3, || setups += 1, |()| calls += 1);
        assert!(s >= 0.0);
        assert_eq!((setups, calls), (4, 4));
    }
}
