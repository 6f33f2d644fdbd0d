//! The one trait every primitive implements in its own folder, so the shared
//! machinery (the verify runner, the conformance driver, file output) never
//! matches over primitives.
//!
//! A [`Problem`] is one generated input type (e.g. `GemmCase<f32>`): it knows
//! which primitive it exercises, how to run it on a backend, how to ask the
//! reference for the answer, how to compare the two under
//! `docs/tolerances.md`, how to certify the reference's answer
//! (`trident_reference::certify`) and how to write itself for the Python peers.
//! [`Input`] holds any problem behind a shared pointer; [`Expected`] and
//! [`Produced`] hold the answers, type-erased, and are only ever read back by
//! the problem that made them.

use std::any::Any;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use trident_core::{Error, Primitive, Primitives, Result};

use crate::check::Verdict;

/// What certifying the reference's answer gives: the worst error as a multiple
/// of its tolerance and an optional remark (e.g. "certificates sampled"), or
/// why the certificate rejects the answer.
pub type Certified = std::result::Result<(f64, Option<String>), String>;

/// One primitive's input type and everything the test kit does with it;
/// implemented once per input type, in that primitive's folder.
pub trait Problem: Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The reference's answer (in f64 where the primitive has a scalar).
    type Expected: fmt::Debug + PartialEq + Send + Sync + 'static;
    /// A backend's answer.
    type Produced: fmt::Debug + PartialEq + Send + Sync + 'static;
    /// The primitive it exercises.
    fn primitive(&self) -> Primitive;
    /// A one-line size summary, e.g. `"f32 m=64 n=64 k=64"`.
    fn describe(&self) -> String;
    /// Runs `backend` on it (the part worth timing).
    fn produce(&self, backend: &dyn Primitives) -> Result<Self::Produced>;
    /// The reference's answer: f32 inputs are widened to f64 first, so the
    /// answer is the f64 reference the contract compares against.
    fn expected(&self, reference: &dyn Primitives) -> Result<Self::Expected>;
    /// Compares a backend's answer with the reference's.
    fn compare(&self, expected: &Self::Expected, got: &Self::Produced) -> Verdict;
    /// Certifies the reference's answer with the independent checks of
    /// `trident_reference::certify` (the reference is never trusted on its
    /// own word).
    fn certify(&self, expected: &Self::Expected) -> Certified;
    /// Writes it to `path` in the format the Python peers read
    /// ([`crate::cases::io`]).
    fn write(&self, path: &Path) -> Result<()>;
    /// Runs it sharded across the ranks of `sharded`'s cluster (each rank
    /// its part of the partitioned inputs) and gathers the answer, in
    /// [`Problem::produce`]'s form, on every rank. `None` where the primitive
    /// (or this input) has no sharded form.
    #[cfg(feature = "dist")]
    fn produce_sharded(
        &self,
        sharded: &trident_dist::Sharded<'_>,
    ) -> Option<Result<Self::Produced>> {
        let _ = sharded;
        None
    }
    /// Whether the sharded answer must equal one device's bit for bit (row
    /// partitions keep every summation order), or only pass the tolerance.
    #[cfg(feature = "dist")]
    fn sharded_exact(&self) -> bool {
        true
    }
}

/// The object-safe face of [`Problem`], implemented for every problem; what
/// [`Input`] calls.
trait Erased: fmt::Debug + Send + Sync {
    fn primitive(&self) -> Primitive;
    fn describe(&self) -> String;
    fn produce(&self, backend: &dyn Primitives) -> Result<Produced>;
    fn expected(&self, reference: &dyn Primitives) -> Result<Expected>;
    fn compare(&self, expected: &Expected, got: &Produced) -> Verdict;
    fn certify(&self, expected: &Expected) -> Certified;
    fn write(&self, path: &Path) -> Result<()>;
    #[cfg(feature = "dist")]
    fn produce_sharded(&self, sharded: &trident_dist::Sharded<'_>) -> Option<Result<Produced>>;
    #[cfg(feature = "dist")]
    fn sharded_exact(&self) -> bool;
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Erased) -> bool;
}

impl<P: Problem> Erased for P {
    fn primitive(&self) -> Primitive {
        Problem::primitive(self)
    }
    fn describe(&self) -> String {
        Problem::describe(self)
    }
    fn produce(&self, backend: &dyn Primitives) -> Result<Produced> {
        Ok(Produced(Box::new(Problem::produce(self, backend)?)))
    }
    fn expected(&self, reference: &dyn Primitives) -> Result<Expected> {
        Ok(Expected(Box::new(Problem::expected(self, reference)?)))
    }
    fn compare(&self, expected: &Expected, got: &Produced) -> Verdict {
        match (expected.get::<P::Expected>(), got.get::<P::Produced>()) {
            (Some(e), Some(g)) => Problem::compare(self, e, g),
            _ => {
                let mut v = Verdict::default();
                v.fail("internal: input, expected and produced answers are of different kinds");
                v
            }
        }
    }
    fn certify(&self, expected: &Expected) -> Certified {
        match expected.get::<P::Expected>() {
            Some(e) => Problem::certify(self, e),
            None => Err("internal: input and answer are of different kinds".into()),
        }
    }
    fn write(&self, path: &Path) -> Result<()> {
        Problem::write(self, path)
    }
    #[cfg(feature = "dist")]
    fn produce_sharded(&self, sharded: &trident_dist::Sharded<'_>) -> Option<Result<Produced>> {
        Problem::produce_sharded(self, sharded).map(|r| r.map(|p| Produced(Box::new(p))))
    }
    #[cfg(feature = "dist")]
    fn sharded_exact(&self) -> bool {
        Problem::sharded_exact(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Erased) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }
}

/// A type-erased answer that can be compared and printed.
trait Answer: fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Answer) -> bool;
}

impl<T: fmt::Debug + PartialEq + Send + Sync + 'static> Answer for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Answer) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

macro_rules! answer {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(Box<dyn Answer>);

        impl $name {
            /// The answer as the problem's own type, if it is one.
            pub fn get<T: 'static>(&self) -> Option<&T> {
                self.0.as_any().downcast_ref::<T>()
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.same(other.0.as_ref())
            }
        }
    };
}

answer!(
    /// The reference's answer to an [`Input`] ([`Problem::Expected`]).
    Expected
);
answer!(
    /// A backend's answer to an [`Input`] ([`Problem::Produced`]).
    Produced
);

/// A generated input of any primitive: a [`Problem`] behind a shared pointer
/// (cheap to clone).
#[derive(Clone, Debug)]
pub struct Input(Arc<dyn Erased>);

impl PartialEq for Input {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(other.0.as_ref())
    }
}

impl<P: Problem> From<P> for Input {
    fn from(p: P) -> Self {
        Self(Arc::new(p))
    }
}

impl Input {
    /// Wraps a problem.
    pub fn new(problem: impl Problem) -> Self {
        problem.into()
    }
    /// The problem as its own type (e.g. `GemmCase<f32>`), if it is one.
    pub fn downcast_ref<T: Problem>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }
    /// The primitive it exercises.
    pub fn kind(&self) -> Primitive {
        self.0.primitive()
    }
    /// The primitive's name, as in [`trident_core::PRIMITIVES`].
    pub fn primitive(&self) -> &'static str {
        self.kind().name()
    }
    /// A one-line size summary ([`Problem::describe`]).
    pub fn describe(&self) -> String {
        self.0.describe()
    }
    /// Runs `backend` on it ([`Problem::produce`]).
    pub fn produce(&self, backend: &dyn Primitives) -> Result<Produced> {
        self.0.produce(backend)
    }
    /// The reference's answer ([`Problem::expected`]).
    pub fn expected(&self, reference: &dyn Primitives) -> Result<Expected> {
        self.0.expected(reference)
    }
    /// Compares a backend's answer with the reference's ([`Problem::compare`]).
    pub fn compare(&self, expected: &Expected, got: &Produced) -> Verdict {
        self.0.compare(expected, got)
    }
    /// Certifies the reference's answer ([`Problem::certify`]).
    pub fn certify(&self, expected: &Expected) -> Certified {
        self.0.certify(expected)
    }
    /// Writes it for the Python peers ([`Problem::write`]).
    pub fn write(&self, path: &Path) -> Result<()> {
        self.0.write(path)
    }
    /// Runs it sharded over a cluster ([`Problem::produce_sharded`]).
    #[cfg(feature = "dist")]
    pub fn produce_sharded(&self, sharded: &trident_dist::Sharded<'_>) -> Option<Result<Produced>> {
        self.0.produce_sharded(sharded)
    }
    /// Whether the sharded answer must equal one device's bits ([`Problem::sharded_exact`]).
    #[cfg(feature = "dist")]
    pub fn sharded_exact(&self) -> bool {
        self.0.sharded_exact()
    }
}

/// `Err` for an input that is not of the type a caller needs.
pub fn wrong_kind(input: &Input, want: &str) -> Error {
    Error::arg(
        "input",
        format!("expected a {want} input, got {}", input.describe()),
    )
}
