//! Trident's errors as Python exceptions.
//!
//! Python users catch exceptions by kind, not by Rust variant, so the mapping
//! follows what the builtins mean: bad shapes and values are `ValueError`,
//! wrong types `TypeError` (raised by the argument checks, before any Trident
//! call), a failed allocation `MemoryError`; everything else is a subclass of
//! [`TridentError`]. Every message starts with the name of the Python call
//! and keeps the field and index the core names, so the user can find the
//! bad entry.

use pyo3::exceptions::{PyException, PyMemoryError, PyTypeError, PyValueError};
use pyo3::{PyErr, create_exception};
use trident::Error;

create_exception!(
    trident_compute,
    TridentError,
    PyException,
    "Base class of the errors Trident raises that are not ValueError, TypeError or MemoryError."
);
create_exception!(
    trident_compute,
    BackendUnavailableError,
    TridentError,
    "The backend asked for is not compiled in or cannot run on this machine."
);
create_exception!(
    trident_compute,
    UnsupportedError,
    TridentError,
    "No backend here implements this call for these inputs (a precision, a kind of input)."
);
create_exception!(
    trident_compute,
    BackendError,
    TridentError,
    "A failure inside a backend's driver or runtime (CUDA, NVRTC, wgpu)."
);

/// `err`, raised by the Python call `call`, as the exception its kind maps to.
pub fn to_py(call: &str, err: Error) -> PyErr {
    to_py_in(call, None, err)
}

/// As [`to_py`], naming the argument `arg` the failure is about when the
/// core's field name cannot (both matrices of a product have `indices`).
pub fn to_py_in(call: &str, arg: Option<&str>, err: Error) -> PyErr {
    let msg = match arg {
        Some(a) => format!("{call}: argument {a}: {err}"),
        None => format!("{call}: {err}"),
    };
    match err {
        Error::DimensionMismatch { .. }
        | Error::InvalidCsr { .. }
        | Error::NonFinite { .. }
        | Error::NegativeCapacity { .. }
        | Error::TooLarge { .. }
        | Error::InvalidArgument { .. }
        | Error::Parse { .. } => PyValueError::new_err(msg),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        Error::Unsupported(_) => UnsupportedError::new_err(msg),
        Error::BackendUnavailable(_) => BackendUnavailableError::new_err(msg),
        Error::Backend(_) => BackendError::new_err(msg),
        _ => TridentError::new_err(msg),
    }
}

/// A `ValueError` with the call's name in front.
pub fn value(call: &str, detail: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{call}: {detail}"))
}

/// A `TypeError` with the call's name in front.
pub fn type_error(call: &str, detail: impl std::fmt::Display) -> PyErr {
    PyTypeError::new_err(format!("{call}: {detail}"))
}

/// A Rust panic caught at the boundary: a bug of ours, reported as a
/// `TridentError` rather than unwinding into the interpreter.
pub fn internal(call: &str, payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    TridentError::new_err(format!(
        "{call}: internal error (a bug in Trident, please report it): {what}"
    ))
}
