//! Generators, certificates, the conformance suite and the verify runner
