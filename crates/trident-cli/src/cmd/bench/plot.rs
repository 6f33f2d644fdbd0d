//! `trident bench --plot`: one group of bars per case (log-scale median
//! time), one colour per backend or peer that is the same in every plot (so
//! two plots compare at a glance), each bar's time over the fastest peer's on
//! the case written on it, and the machine named under the chart.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Timing, label};
use crate::fail::{CliResult, Fail};
use crate::io::output::Output;

/// The backends' colours (matplotlib's first four, by backend).
const BACKEND_COLOURS: [(&str, RGBColor); 4] = [
    ("cuda", RGBColor(44, 160, 44)),
    ("wgpu", RGBColor(255, 127, 14)),
    ("rayon", RGBColor(31, 119, 180)),
    ("reference", RGBColor(127, 127, 127)),
];

/// The peers' colours, picked by a hash of the library's name.
const PEER_COLOURS: [RGBColor; 8] = [
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(214, 39, 40),
    RGBColor(57, 59, 121),
    RGBColor(82, 163, 155),
];

/// The colour of a backend or peer: fixed per backend; per peer, from its
/// library's name without the version (FNV-1a), so an upgrade keeps it.
fn colour(r: &Timing) -> RGBColor {
    if r.kind == "backend"
        && let Some((_, c)) = BACKEND_COLOURS.iter().find(|(n, _)| *n == r.backend)
    {
        return *c;
    }
    let lib = r.backend.split_whitespace().next().unwrap_or("");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in lib.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    PEER_COLOURS[(h % PEER_COLOURS.len() as u64) as usize]
}

/// Where the series go in a group: backends in preference order, then peers
/// by name.
fn order(r: &Timing) -> (usize, String) {
    let rank = trident::PREFERENCE
        .iter()
        .position(|&b| r.kind == "backend" && b == r.backend)
        .unwrap_or(trident::PREFERENCE.len());
    (rank, label(r))
}

/// The machine, for the plot's footer and the report: CPU, threads, OS and
/// the backends that ran (each as it describes itself, e.g. its GPU).
pub fn machine(backends: &[(String, Box<dyn trident::Primitives>)]) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let names: Vec<String> = backends.iter().map(|(_, b)| b.describe()).collect();
    format!(
        "{cpu}, {threads} threads, {} {}; backends: {}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}

/// Draws the rows as grouped bars into an SVG at `path` (all-or-nothing).
pub fn draw(path: &Path, rows: &[Timing], machine: &str) -> CliResult<()> {
    let mut svg = String::new();
    render(&mut svg, rows, machine)
        .map_err(|e| Fail::Failed(format!("{}: cannot draw the plot: {e}", path.display())))?;
    Output::create(path)?.write_all_and_commit(svg.as_bytes())
}

fn render(
    svg: &mut String,
    rows: &[Timing],
    machine: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let timed: Vec<&Timing> = rows.iter().filter(|r| r.median_s.is_some()).collect();
    let mut cases: Vec<&str> = Vec::new();
    for r in rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    let mut series: Vec<&Timing> = Vec::new();
    for r in &timed {
        if !series.iter().any(|s| label(s) == label(r)) {
            series.push(r);
        }
    }
    series.sort_by_key(|r| order(r));
    let ms = |r: &Timing| r.median_s.map_or(1e-4, |s| (s * 1e3).max(1e-4));
    let (lo, hi) = timed
        .iter()
        .map(|r| ms(r))
        .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    let (lo, hi) = if timed.is_empty() {
        (1e-3, 1.0)
    } else {
        (lo / 2.0, hi * 4.0)
    };
    let longest = cases.iter().map(|c| c.len()).max().unwrap_or(8);
    let group_px = (7 * longest as u32 + 16).max(150);
    let width = (110 + group_px * cases.len().max(1) as u32).max(960);
    let root = SVGBackend::with_string(svg, (width, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, footer) = root.split_vertically(560);
    let mut chart = ChartBuilder::on(&upper)
        .caption(
            "trident bench: median time per call; on each bar, its time over the fastest peer's",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..cases.len().max(1) as f64, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ms per call (log)")
        .draw()?;
    // Each case's series present, in legend order.
    let in_case = |case: &str| -> Vec<&Timing> {
        let mut v: Vec<&Timing> = timed.iter().copied().filter(|r| r.case == case).collect();
        v.sort_by_key(|r| order(r));
        v
    };
    let slot = |case_i: usize, r: &Timing| -> (f64, f64) {
        let here = in_case(cases[case_i]);
        let k = here.iter().position(|s| label(s) == label(r)).unwrap_or(0);
        let w = 0.8 / here.len().max(1) as f64;
        let x0 = case_i as f64 + 0.1 + k as f64 * w;
        (x0 + 0.05 * w, x0 + 0.95 * w)
    };
    for s in &series {
        let c = colour(s);
        let name = label(s);
        let bars: Vec<(f64, f64, f64)> = cases
            .iter()
            .enumerate()
            .filter_map(|(i, case)| {
                let r = timed.iter().find(|r| r.case == *case && label(r) == name)?;
                let (x0, x1) = slot(i, r);
                Some((x0, x1, ms(r)))
            })
            .collect();
        chart
            .draw_series(
                bars.iter()
                    .map(|&(x0, x1, v)| Rectangle::new([(x0, lo), (x1, v)], c.filled())),
            )?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
    }
    let above =
        TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (i, case) in cases.iter().enumerate() {
        let here = in_case(case);
        let peerless = !here.iter().any(|r| r.kind == "peer");
        for r in here {
            let (x0, x1) = slot(i, r);
            let text = match r.ratio {
                Some(x) if x >= 10.0 => format!("{x:.0}x"),
                Some(x) => format!("{x:.2}x"),
                None if peerless => "no peer".to_string(),
                None => continue,
            };
            chart.draw_series(std::iter::once(Text::new(
                text,
                ((x0 + x1) / 2.0, ms(r) * 1.08),
                above.clone(),
            )))?;
        }
    }
    let under =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, case) in cases.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, lo));
        root.draw(&Text::new(case.to_string(), (x, y + 8), under.clone()))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    footer.draw(&Text::new(
        format!("machine: {machine}"),
        (12, 12),
        ("sans-serif", 12).into_font(),
    ))?;
    root.present()?;
    Ok(())
}
