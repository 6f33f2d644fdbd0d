//! # trident-python
//!
//! The extension module `trident_compute._trident` of the Python package
//! `trident-compute`: Trident's five primitives over numpy arrays, through
//! the facade's run-time choice of backend. The public API is the Python
//! layer in `python/trident_compute/` (argument checks in Python terms,
//! scipy matrices in and out, the PyMaxflow-style `maxflow` module); this
//! crate is what it calls.
//!
//! Three rules hold for every function here:
//!
//! - **Zero copy where the layout allows.** float32/float64 arrays are read
//!   in place when their rows are unit-stride (`arrays`), and results are
//!   numpy arrays that take over Trident's buffers where the types agree.
//!   Other layouts are copied, never refused.
//! - **The GIL is released during every computation** (`handles::compute`),
//!   so other Python threads run while Trident works on all cores.
//! - **Errors are exceptions naming the argument**: `ValueError`,
//!   `TypeError`, `MemoryError`, or a `TridentError` subclass (`errors`);
//!   a Rust panic is caught at the boundary and raised as a `TridentError`,
//!   never unwound into the interpreter.
#![warn(missing_docs)]
// Library code returns errors; it never unwraps user data (as in the other
// crates of the workspace).
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod arrays;
mod coder;
mod dense;
mod errors;
mod flow;
mod handles;
mod points;
mod sparse;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use trident::{BackendKind, Trident};

/// What is compiled in, what runs here and what a call would be offered to
/// first, as a dict (the Python `backends()` documents the keys).
#[pyfunction]
fn backends(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("compiled", trident::compiled_backends())?;
    let probe = py.detach(Trident::probe);
    let available = PyList::empty(py);
    let unavailable = PyDict::new(py);
    for c in probe.candidates() {
        let compiled = BackendKind::from_name(c.name).is_some_and(trident::is_compiled);
        match &c.outcome {
            Ok(desc) => available.append((c.name, desc))?,
            Err(why) if compiled => unavailable.set_item(c.name, why)?,
            Err(_) => {}
        }
    }
    d.set_item("available", available)?;
    d.set_item("unavailable", unavailable)?;
    let forced = std::env::var(trident::BACKEND_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty());
    d.set_item("forced", forced)?;
    match py.detach(|| handles::handle("backends", None)) {
        Ok(t) => {
            d.set_item("default", t.primary())?;
            d.set_item("per_call", t.cost_model().describe())?;
        }
        Err(e) => {
            d.set_item("default", py.None())?;
            d.set_item("per_call", e.value(py).str()?)?;
        }
    }
    Ok(d)
}

/// The backend that served the last call of this process (`None` before
/// the first).
#[pyfunction]
fn last_backend() -> Option<&'static str> {
    handles::last_backend()
}

/// The lines of `Trident::report` for the default handle: which backend
/// serves each primitive and why the others were passed over. It runs one
/// tiny call per primitive on each backend the first time.
#[pyfunction]
fn report(py: Python<'_>) -> PyResult<String> {
    let t = py.detach(|| handles::handle("report", None))?;
    Ok(py.detach(|| t.report()))
}

/// The extension module.
#[pymodule]
fn _trident(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(last_backend, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(dense::gemm, m)?)?;
    m.add_function(wrap_pyfunction!(sparse::spgemm, m)?)?;
    m.add_function(wrap_pyfunction!(points::knn, m)?)?;
    m.add_function(wrap_pyfunction!(points::closest_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(points::knn_f64, m)?)?;
    m.add_function(wrap_pyfunction!(points::closest_pairs_f64, m)?)?;
    m.add_function(wrap_pyfunction!(coder::sparse_encode, m)?)?;
    m.add_function(wrap_pyfunction!(flow::maximum_flow, m)?)?;
    m.add_class::<flow::FlowGraph>()?;
    m.add("TridentError", py.get_type::<errors::TridentError>())?;
    m.add(
        "BackendUnavailableError",
        py.get_type::<errors::BackendUnavailableError>(),
    )?;
    m.add(
        "UnsupportedError",
        py.get_type::<errors::UnsupportedError>(),
    )?;
    m.add("BackendError", py.get_type::<errors::BackendError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
