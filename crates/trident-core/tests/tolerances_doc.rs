//! `docs/tolerances.md` and `trident_core::tol` must list the same constants
//! with the same literal values: every `pub const` of `src/tol.rs` is a row of
//! the table, and every row of the table is a `pub const`.

use std::collections::BTreeMap;
use std::path::Path;

fn read(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// Top-level `pub const NAME: TYPE = VALUE;` lines of tol.rs (not indented:
/// associated consts and `const fn`s are not table entries), name -> literal.
fn consts_in_source(src: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in src.lines() {
        let Some(rest) = line.strip_prefix("pub const ") else {
            continue;
        };
        if rest.starts_with("fn ") {
            continue;
        }
        let (name, rest) = rest.split_once(':').expect("pub const NAME: TYPE = VALUE;");
        let (_, value) = rest.split_once('=').expect("pub const NAME: TYPE = VALUE;");
        let value = value.trim().trim_end_matches(';').trim();
        out.insert(name.trim().to_string(), value.to_string());
    }
    out
}

/// Rows `| \`NAME\` | \`VALUE\` | meaning |` of the doc's table.
fn consts_in_doc(doc: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| a | b | c |" splits into ["", a, b, c, ""].
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let value = cells[2].trim_matches('`').to_string();
        assert!(
            out.insert(name.clone(), value).is_none(),
            "{name} listed twice"
        );
    }
    out
}

#[test]
fn doc_table_matches_tol_module() {
    let src = consts_in_source(&read("src/tol.rs"));
    let doc = consts_in_doc(&read("../../docs/tolerances.md"));
    assert!(!src.is_empty(), "no constants found in src/tol.rs");
    for (name, value) in &src {
        match doc.get(name) {
            None => panic!("trident_core::tol::{name} is missing from docs/tolerances.md"),
            Some(v) => assert_eq!(
                v, value,
                "{name}: docs/tolerances.md says {v}, src/tol.rs says {value}"
            ),
        }
    }
    for name in doc.keys() {
        assert!(
            src.contains_key(name),
            "docs/tolerances.md lists {name}, which is not a constant of trident_core::tol"
        );
    }
}

#[test]
fn values_parse_and_match_the_compiled_constants() {
    use trident_core::tol::*;
    let compiled: [(&str, f64); 21] = [
        ("GEMM_STRICT_F32", GEMM_STRICT_F32),
        ("GEMM_F64", GEMM_F64),
        ("GEMM_TF32", GEMM_TF32),
        ("GEMM_ABS", GEMM_ABS),
        ("SPGEMM_F32", SPGEMM_F32),
        ("SPGEMM_F64", SPGEMM_F64),
        ("NEAREST_REL", NEAREST_REL),
        ("NEAREST_ABS", NEAREST_ABS),
        ("NEAREST_F64_REL", NEAREST_F64_REL),
        ("OMP_TIE_F32", OMP_TIE_F32),
        ("OMP_TIE_F64", OMP_TIE_F64),
        ("OMP_RESIDUAL", OMP_RESIDUAL),
        ("OMP_COEF_F32", OMP_COEF_F32),
        ("OMP_COEF_F64", OMP_COEF_F64),
        ("OMP_RESIDUAL_FLOOR_F32", OMP_RESIDUAL_FLOOR_F32),
        ("OMP_RESIDUAL_FLOOR_F64", OMP_RESIDUAL_FLOOR_F64),
        ("OMP_CORR_FLOOR_F32", OMP_CORR_FLOOR_F32),
        ("OMP_CORR_FLOOR_F64", OMP_CORR_FLOOR_F64),
        ("UNIT_NORM_TOL", UNIT_NORM_TOL),
        ("OMP_F32_REDO_PIVOT", OMP_F32_REDO_PIVOT),
        ("OMP_ILL_PIVOT_F64", OMP_ILL_PIVOT_F64),
    ];
    let doc = consts_in_doc(&read("../../docs/tolerances.md"));
    for (name, value) in compiled {
        let lit = doc
            .get(name)
            .unwrap_or_else(|| panic!("{name} not in the doc"));
        let parsed: f64 = lit
            .parse()
            .unwrap_or_else(|e| panic!("{name} = {lit}: {e}"));
        assert_eq!(parsed, value, "{name}");
    }
    assert_eq!(doc.len(), compiled.len(), "a constant is not in this list");
}
