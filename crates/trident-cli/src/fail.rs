//! Why a command failed, and the exit code each reason gets.
//!
//! The codes are part of the CLI's interface (scripts branch on them) and are
//! listed in `trident --help`:
//! 0 ok, 1 verification or computation failure, 2 usage error, 3 bad input
//! file, 4 I/O or output error.

use trident::Error;

/// A command's failure, classified by who can fix it.
#[derive(Debug)]
pub enum Fail {
    /// The computation ran and failed (a verify mismatch, a backend error, a
    /// backend that cannot run here): exit 1.
    Failed(String),
    /// The command line is wrong (unknown name, bad flag value): exit 2.
    Usage(String),
    /// An input file is malformed or describes a problem Trident rejects: exit 3.
    BadInput(String),
    /// A file could not be opened, read or written: exit 4.
    Io(String),
}

/// Shorthand for the commands' results.
pub type CliResult<T> = std::result::Result<T, Fail>;

impl Fail {
    /// The process exit code of this failure.
    pub fn code(&self) -> u8 {
        match self {
            Fail::Failed(_) => 1,
            Fail::Usage(_) => 2,
            Fail::BadInput(_) => 3,
            Fail::Io(_) => 4,
        }
    }

    /// The message, without the classification.
    pub fn message(&self) -> &str {
        match self {
            Fail::Failed(m) | Fail::Usage(m) | Fail::BadInput(m) | Fail::Io(m) => m,
        }
    }

    /// A library error met while working on the problem read from `what` (a
    /// file name or a description): errors about the data are bad input (3),
    /// file errors are I/O (4), and the rest (backend failures) are failures (1).
    ///
    /// Allocation limits (`TooLarge`, `OutOfMemory`) count as bad input: they
    /// come from sizes a file declared, e.g. a DIMACS file with 2^32 - 1 nodes.
    pub fn from_lib(what: &str, e: Error) -> Fail {
        let msg = format!("{what}: {e}");
        match e {
            Error::Io(_) => Fail::Io(msg),
            Error::Unsupported(_) | Error::BackendUnavailable(_) | Error::Backend(_) => {
                Fail::Failed(msg)
            }
            // Everything else describes the input: shapes, CSR structure,
            // NaN, negative capacities, sizes, arguments, parse errors.
            _ => Fail::BadInput(msg),
        }
    }
}

/// A malformed file: `path:LOCATION: what was expected`.
pub fn bad_file(
    path: &std::path::Path,
    loc: impl std::fmt::Display,
    msg: impl std::fmt::Display,
) -> Fail {
    Fail::BadInput(format!("{}:{loc}: {msg}", path.display()))
}

/// A file that could not be read or written.
pub fn io_error(path: &std::path::Path, e: impl std::fmt::Display) -> Fail {
    Fail::Io(format!("{}: {e}", path.display()))
}
