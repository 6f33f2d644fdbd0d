//! The results file `benches/peers.py` writes and both `bench_table --peers`
//! and `trident bench --py-peers` read.
//!
//! Tab-separated text, one line per case, so that no JSON parser is needed on
//! either side; `#` lines and blank lines are comments, and a first line
//! starting with `case<TAB>` is the header. Columns (shown here separated by
//! ` | `, tabs in the file):
//!
//! ```text
//! case | peer | median_s | reps | check | note
//! cut-2048 | PyMaxflow 1.3.2 | 2.41 | 3 | 1234567 | maxflow() only, graph build excluded
//! ```
//!
//! `median_s` is the peer's time for the whole case (where the peer timed a
//! subset, as for OMP, the script has scaled it up and says so in `note`);
//! `check` is the number the bench programs' `Output::check` describes
//! (nonzeros of a product, the last pair's distance, the flow), or empty. A
//! case whose peer could not run (a package missing) is one line with peer
//! `-`, `median_s` `skipped` and the reason as its note: [`Skipped`].

use std::path::Path;

/// One peer's result for one case.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerResult {
    /// Benchmark case name.
    pub case: String,
    /// The peer library and version, e.g. `numpy 2.4.6 (OpenBLAS)`.
    pub peer: String,
    /// Median time for the whole case, seconds.
    pub median_s: f64,
    /// Timed repeats behind the median.
    pub reps: usize,
    /// The peer's check number (the bench programs' `Output::check`), if it
    /// computes one.
    pub check: Option<f64>,
    /// What was timed and how, in a few words.
    pub note: String,
}

/// A case the peers script skipped, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// Benchmark case name.
    pub case: String,
    /// Why (e.g. the missing package).
    pub note: String,
}

/// A parsed results file: the timed peers and the skipped cases, each in
/// file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeersFile {
    /// One row per (case, peer) that was timed.
    pub results: Vec<PeerResult>,
    /// The cases no peer was timed on.
    pub skipped: Vec<Skipped>,
}

/// Parses a results file's text; errors name the line.
pub fn parse(text: &str) -> Result<PeersFile, String> {
    let mut out = PeersFile::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') || line.starts_with("case\t") {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 5 {
            return Err(bad("expected case, peer, median_s, reps, check[, note]"));
        }
        if f[2] == "skipped" {
            out.skipped.push(Skipped {
                case: f[0].to_string(),
                note: f.get(5).unwrap_or(&"").to_string(),
            });
            continue;
        }
        let median_s: f64 = f[2].parse().map_err(|_| bad("median_s is not a number"))?;
        if !(median_s > 0.0 && median_s.is_finite()) {
            return Err(bad("median_s must be positive"));
        }
        let check = match f[4] {
            "" => None,
            s => Some(s.parse().map_err(|_| bad("check is not a number"))?),
        };
        out.results.push(PeerResult {
            case: f[0].to_string(),
            peer: f[1].to_string(),
            median_s,
            reps: f[3].parse().map_err(|_| bad("reps is not an integer"))?,
            check,
            note: f.get(5).unwrap_or(&"").to_string(),
        });
    }
    Ok(out)
}

/// Reads and parses a results file.
pub fn read(path: &Path) -> Result<PeersFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_comments_and_rows() {
        let text = "# from peers.py\ncase\tpeer\tmedian_s\treps\tcheck\tnote\n\
                    cut-512\tPyMaxflow 1.3.2\t0.125\t3\t4711\tmaxflow() only\n\n\
                    gemm-4096\tnumpy\t1.5\t3\t\n";
        let r = parse(text).unwrap().results;
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].case, "cut-512");
        assert_eq!(r[0].check, Some(4711.0));
        assert_eq!(r[0].note, "maxflow() only");
        assert_eq!(r[1].check, None);
        assert_eq!(r[1].note, "");
    }

    #[test]
    fn a_skipped_case_is_kept_apart() {
        let text = "cut-512\t-\tskipped\t\t\tPyMaxflow not installed\n\
                    gemm-4096\tnumpy\t1.5\t3\t\t\n";
        let f = parse(text).unwrap();
        assert_eq!(f.results.len(), 1);
        assert_eq!(
            f.skipped,
            [Skipped {
                case: "cut-512".into(),
                note: "PyMaxflow not installed".into()
            }]
        );
    }

    #[test]
    fn names_the_bad_line() {
        let e = parse("cut-512\tx\tfast\t3\t\t\n").unwrap_err();
        assert!(e.starts_with("line 1: median_s"), "{e}");
        assert!(parse("cut-512\tx\t1.0\n").is_err());
        assert!(parse("cut-512\tx\t-1.0\t3\t\t\n").is_err());
    }
}
