//! Reads numbers out of the kernel sources, for the tests that keep the
//! constants Rust repeats from `kernels/*.cu` (block sizes, tile shapes,
//! buffer layouts) equal to the kernels' own.

/// The value of `#define NAME VALUE` in `src` (decimal, hex or float, with
/// a `u`/`ull` suffix and a trailing comment allowed); panics naming the
/// macro when there is none or it is not a number.
pub(crate) fn define(src: &str, name: &str) -> f64 {
    let prefix = format!("#define {name} ");
    let line = src
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in the kernel source"));
    let value = line[prefix.len()..].split("//").next().unwrap_or("").trim();
    number(value).unwrap_or_else(|| panic!("`{line}` is not a plain number"))
}

fn number(text: &str) -> Option<f64> {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as f64),
        None => t.parse().ok(),
    }
}

/// The number right after `marker` in `src` (the first occurrence), e.g.
/// the size in `static_assert(sizeof(Grid<double>) <= 256`.
pub(crate) fn after(src: &str, marker: &str) -> f64 {
    let at = src
        .find(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in the kernel source"));
    let rest = &src[at + marker.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .unwrap_or(rest.len());
    number(&rest[..end]).unwrap_or_else(|| panic!("no number after `{marker}`"))
}

#[test]
fn parses_the_forms_the_kernels_use() {
    let src = "#define A 256\n#define B 0xffffffffu\n#define C 1e-8\n#define D 80 // words\n";
    assert_eq!(define(src, "A"), 256.0);
    assert_eq!(define(src, "B"), u32::MAX as f64);
    assert_eq!(define(src, "C"), 1e-8);
    assert_eq!(define(src, "D"), 80.0);
    assert_eq!(after("x <= 256, y", "x <= "), 256.0);
}
