//! The `Trident` handles calls go to, and the one way every call runs: with
//! the GIL released and panics caught.
//!
//! A handle probes the backends once per process (the facade caches the
//! probe), so the handles are made on first use and kept: `backend=None`
//! gets the facade's own choice (`Trident::new`, which honours
//! `TRIDENT_BACKEND`), `backend="rayon"` a handle over that backend alone.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use trident::{BackendKind, Error, Trident};

use crate::errors;

/// Why a handle could not be made, kept so that every later call raises the
/// same exception (the error itself is not `Clone`).
#[derive(Clone)]
struct Failure {
    unavailable: bool,
    message: String,
}

type Slot = OnceLock<Result<Trident, Failure>>;

static DEFAULT: Slot = OnceLock::new();
static NAMED: [Slot; 4] = [const { OnceLock::new() }; 4];
/// The backend that served the last call made through any handle.
static LAST: Mutex<Option<&'static str>> = Mutex::new(None);

fn failure(e: Error) -> Failure {
    Failure {
        unavailable: matches!(e, Error::BackendUnavailable(_)),
        message: e.to_string(),
    }
}

/// The handle for `backend` (`None`: the facade's choice), made on first use.
/// Call without the GIL: the first call probes the GPU drivers.
pub fn handle(call: &str, backend: Option<&str>) -> PyResult<&'static Trident> {
    let slot = match backend {
        None => DEFAULT.get_or_init(|| Trident::new().map_err(failure)),
        Some(name) => {
            let Some(i) = BackendKind::ALL.iter().position(|k| k.name() == name) else {
                return Err(errors::value(
                    call,
                    format!(
                        "argument backend: unknown backend {name:?}; expected None or one of {:?}",
                        trident::PREFERENCE
                    ),
                ));
            };
            NAMED[i].get_or_init(|| Trident::only(name).map_err(failure))
        }
    };
    slot.as_ref().map_err(|f| {
        let msg = format!("{call}: {}", f.message);
        if f.unavailable {
            errors::BackendUnavailableError::new_err(msg)
        } else {
            errors::value(call, &f.message)
        }
    })
}

/// Runs `f` on the handle for `backend` with the GIL released (other Python
/// threads run meanwhile), turning a Trident error into its exception and a
/// panic into a `TridentError`, and records which backend served the call.
pub fn compute<R, F>(py: Python<'_>, call: &'static str, backend: Option<&str>, f: F) -> PyResult<R>
where
    R: Send,
    F: FnOnce(&Trident) -> trident::Result<R> + Send,
{
    compute_in(py, call, backend, None, f)
}

/// As [`compute`], naming the argument a Trident error is about.
pub fn compute_in<R, F>(
    py: Python<'_>,
    call: &'static str,
    backend: Option<&str>,
    arg: Option<&str>,
    f: F,
) -> PyResult<R>
where
    R: Send,
    F: FnOnce(&Trident) -> trident::Result<R> + Send,
{
    let out = py.detach(|| {
        let t = handle(call, backend).map_err(Outcome::Py)?;
        let r = catch_unwind(AssertUnwindSafe(|| f(t))).map_err(Outcome::Panic)?;
        if let Ok(mut last) = LAST.lock() {
            *last = Some(t.served_last());
        }
        r.map_err(Outcome::Trident)
    });
    out.map_err(|o| match o {
        Outcome::Py(e) => e,
        Outcome::Trident(e) => errors::to_py_in(call, arg, e),
        Outcome::Panic(p) => errors::internal(call, p),
    })
}

/// Runs host-side work that may panic (conversions of user data) with the
/// GIL released, a panic becoming a `TridentError`.
pub fn detached<R: Send>(
    py: Python<'_>,
    call: &'static str,
    f: impl FnOnce() -> PyResult<R> + Send,
) -> PyResult<R> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .unwrap_or_else(|p| Err(errors::internal(call, p)))
}

enum Outcome {
    Py(PyErr),
    Trident(Error),
    Panic(Box<dyn std::any::Any + Send>),
}

/// The backend that served the last call of this process, if any.
pub fn last_backend() -> Option<&'static str> {
    LAST.lock().ok().and_then(|l| *l)
}
