//! `trident verify`: the CLI face of `trident_testkit::verify`.

use trident_testkit::cases::Size;
use trident_testkit::verify::{self, Candidate, Options};

const USAGE: &str = "usage: trident verify [--backend NAME] [--primitive NAME] [--case NAME] [--size small|large] [--seed N]";

/// Parses the arguments, runs verify and prints the table. `Ok(false)` when
/// something failed.
pub fn main(args: &[String]) -> Result<bool, String> {
    let mut opts = Options {
        seed: trident_testkit::seed_from_env(),
        ..Options::default()
    };
    let mut backend: Option<String> = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--backend" => backend = Some(value()?),
            "--primitive" => opts.primitive = Some(value()?),
            "--case" => opts.case = Some(value()?),
            "--size" => opts.size = value()?.parse::<Size>().map_err(|e| e.to_string())?,
            "--seed" => {
                let v = value()?;
                opts.seed = trident_testkit::parse_seed(&v)
                    .ok_or_else(|| format!("--seed {v:?} is not a u64 (decimal or 0x hex)"))?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(true);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let names: Vec<String> = match &backend {
        Some(b) => {
            opts.required.push(b.clone());
            vec![b.clone()]
        }
        None => trident::compiled_backends()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    if let Some(b) = &backend
        && trident::BackendKind::from_name(b).is_none()
    {
        return Err(format!(
            "unknown backend {b:?}; expected one of {:?}",
            trident::PREFERENCE
        ));
    }
    let candidates = names
        .into_iter()
        .map(|name| {
            let backend = trident::backend_by_name(&name).map_err(|e| e.to_string());
            if let Ok(b) = &backend {
                eprintln!("verify: backend {name}: {}", b.describe());
            }
            Candidate { name, backend }
        })
        .collect();
    let report = verify::run(&opts, candidates, &mut std::io::stderr());
    print!("{}", report.table());
    Ok(report.ok())
}
