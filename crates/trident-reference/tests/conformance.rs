//! The shared conformance suite (trident-testkit) on the reference backend: one
//! test per primitive plus bad input. An unavailable backend is reported as
//! SKIPPED unless named in TRIDENT_REQUIRE_BACKENDS.
#![allow(missing_docs)]

trident_testkit::conformance_tests!(reference, trident_reference::ReferenceBackend::new());
