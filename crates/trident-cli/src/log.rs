//! The subscriber of the library's `tracing` events: the libraries only
//! emit (phase timings, which backend served a call and why, solver counts,
//! the kernel cache's warning); the application picks what to show. Here:
//! plain lines on stderr, warnings by default.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::fail::{CliResult, Fail};

/// The filter `--log` or `-v` asks for (`--log` wins), else `$RUST_LOG`,
/// else warnings only. `true` when more than warnings can be shown (the
/// progress bars then stay off, so the lines do not tear them).
pub fn init(verbose: u8, log: Option<&str>) -> CliResult<bool> {
    let env = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let (spec, from) = match (log, verbose, env) {
        (Some(s), _, _) => (s.to_owned(), "--log"),
        (None, 1, _) => ("debug".to_owned(), "-v"),
        (None, 2.., _) => ("trace".to_owned(), "-vv"),
        (None, 0, Some(s)) => (s, "RUST_LOG"),
        (None, 0, None) => ("warn".to_owned(), "the default"),
    };
    let filter: Targets = spec.parse().map_err(|e| {
        Fail::Usage(format!(
            "{from}: {spec:?} is not a log filter ({e}); give a level (`debug`) or \
             crate=level pairs (`trident_rayon=debug,warn`)"
        ))
    })?;
    // Only fails when a subscriber is already set, which `main` never does.
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .try_init();
    Ok(LevelFilter::current() > LevelFilter::WARN)
}
