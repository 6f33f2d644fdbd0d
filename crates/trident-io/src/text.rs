//! Numbered lines of a text format, with errors that name the line.

use std::io::BufRead;

use crate::{At, Error, Result};

/// The lines of `r`, numbered from 1, without their `\n` / `\r\n`.
pub(crate) struct Lines<R> {
    r: R,
    no: usize,
    bytes: Vec<u8>,
    line: String,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(r: R) -> Self {
        Lines {
            r,
            no: 0,
            bytes: Vec::new(),
            line: String::new(),
        }
    }

    /// The number of the last line returned (0 before the first).
    pub(crate) fn number(&self) -> usize {
        self.no
    }

    /// The next line and its number, `None` at the end; `what` names what the
    /// line was expected to hold, for the error when it is not text.
    pub(crate) fn next_line(&mut self, what: &str) -> Result<Option<(usize, &str)>> {
        self.bytes.clear();
        if self.r.read_until(b'\n', &mut self.bytes)? == 0 {
            return Ok(None);
        }
        self.no += 1;
        if self.bytes.last() == Some(&b'\n') {
            self.bytes.pop();
            if self.bytes.last() == Some(&b'\r') {
                self.bytes.pop();
            }
        }
        self.line.clear();
        match std::str::from_utf8(&self.bytes) {
            Ok(s) => self.line.push_str(s),
            Err(e) => {
                return Err(Error::format(
                    At::Line(self.no),
                    format!(
                        "cannot read {what}: not UTF-8 text (byte {} of the line)",
                        e.valid_up_to()
                    ),
                ));
            }
        }
        Ok(Some((self.no, &self.line)))
    }
}

/// A float printed with the fewest digits that read back to the same bits:
/// plain (`0.25`, `-3`) for moderate magnitudes, scientific (`1e-300`,
/// `3.4028235e38`) otherwise, where plain notation would spell out hundreds
/// of zeros. Both are Rust's shortest round-trip forms.
pub(crate) struct Num<T>(pub(crate) T);

impl<T: Copy + Into<f64> + std::fmt::Display + std::fmt::LowerExp> std::fmt::Display for Num<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.0.into().abs();
        if a == 0.0 || (1e-5..1e16).contains(&a) {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}
