//! Progress bars on stderr, shown only to a person watching: hidden when
//! stderr is not a terminal and with `--json` (where a script reads the output).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether bars are drawn in this run.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    enabled: bool,
}

impl Progress {
    /// Bars on when stderr is a terminal and the output is not JSON.
    pub fn new(json: bool) -> Self {
        Self {
            enabled: !json && std::io::stderr().is_terminal(),
        }
    }

    /// `true` when bars are drawn.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A spinner for a step of unknown length (a solve), with elapsed time.
    pub fn spinner(&self, msg: impl Into<String>) -> ProgressBar {
        if !self.enabled {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
            pb.set_style(style);
        }
        pb.set_message(msg.into());
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    }

    /// A bar over `len` steps (bytes of a file, verify cases).
    pub fn bar(&self, len: u64, msg: impl Into<String>, bytes: bool) -> ProgressBar {
        if !self.enabled {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new(len);
        let template = if bytes {
            "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})"
        } else {
            "{msg} [{bar:30}] {pos}/{len} [{elapsed}]"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.set_message(msg.into());
        pb
    }
}
