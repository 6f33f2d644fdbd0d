//! SparseCoder across ranks: the signals are partitioned (each rank codes
//! its rows), the dictionary is replicated (every rank passes it, or takes
//! it from one rank with [`Sharded::broadcast_dictionary`]); each rank forms
//! the Gram matrix itself, which costs less than sending it. Codes stay with
//! their signals; [`Sharded::gather_codes`] collects them on demand.

use trident_core::{Dictionary, MatRef, Result, Scalar, SparseCodes, StopRule};

use crate::comm::CommExt;
use crate::sharded::{ShardScalar, Sharded, bits};

/// A stop rule as numbers every rank can compare.
fn rule_items(rule: &StopRule) -> Vec<(&'static str, u64)> {
    let (kind, s, e) = match *rule {
        StopRule::Sparsity(s) => (1, s as u64, 0),
        StopRule::Error(e) => (2, 0, e.to_bits()),
        StopRule::SparsityOrError { sparsity, error } => (3, sparsity as u64, error.to_bits()),
        // A rule this crate does not know yet: compared by its printed form.
        #[allow(unreachable_patterns)]
        _ => (4, 0, crate::sharded::digest(format!("{rule:?}").as_bytes())),
    };
    vec![("rule", kind), ("rule.sparsity", s), ("rule.error", e)]
}

impl<'a> Sharded<'a> {
    /// Codes this rank's `signals` over the replicated `dict`.
    pub fn encode<T: ShardScalar>(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        let mut items = vec![
            ("dict.n", dict.n() as u64),
            ("dict.atoms", dict.atoms() as u64),
            ("signals.cols", signals.cols() as u64),
            ("scalar type", bits(T::ONE)),
        ];
        items.extend(rule_items(&rule));
        items.push(self.replica("dict (contents)", dict.data()));
        self.agree(&items)?;
        self.settle(T::coder(self.backend()).encode(dict, signals, rule))
    }

    /// `root`'s dictionary on every rank (`None` elsewhere).
    pub fn broadcast_dictionary<T: Scalar>(
        &self,
        root: usize,
        dict: Option<&Dictionary<T>>,
    ) -> Result<Dictionary<T>> {
        let shape = dict.map(|d| [d.n() as u64, d.atoms() as u64]);
        let shape = self
            .comm()
            .broadcast_vec(root, shape.as_ref().map(|s| &s[..]))?;
        let data = self.comm().broadcast_vec(root, dict.map(|d| d.data()))?;
        Dictionary::new(shape[0] as usize, shape[1] as usize, data)
    }

    /// Every rank's codes, in rank order (signal order), on every rank.
    pub fn gather_codes<T: Scalar>(&self, local: &SparseCodes<T>) -> Result<SparseCodes<T>> {
        let (offsets, atoms, coefs) =
            self.gather_csr_parts(&local.offsets, &local.atoms, &local.coefs)?;
        Ok(SparseCodes {
            offsets,
            atoms,
            coefs,
            residual_norm2: self.gather_rows(&local.residual_norm2)?,
        })
    }
}
