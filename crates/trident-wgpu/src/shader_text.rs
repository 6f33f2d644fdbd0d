//! Reads numbers and struct layouts out of the shader sources, for the
//! tests that keep what Rust repeats from `shaders/*.wgsl` (workgroup sizes,
//! tile shapes, word offsets, the uniform blocks Rust fills) equal to the
//! shaders' own.

/// The value of `const NAME: T = VALUE;` in `src` (decimal, hex or float,
/// with a `u`/`i`/`f` suffix allowed); panics naming the constant when there
/// is none or it is not a plain number.
pub(crate) fn constant(src: &str, name: &str) -> f64 {
    let prefix = format!("const {name}:");
    let line = src
        .lines()
        .find(|l| l.trim_start().starts_with(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in the shader"));
    let value = line
        .split_once('=')
        .and_then(|(_, v)| v.split(';').next())
        .unwrap_or("")
        .trim();
    // One suffix at most, and `f` is a digit of a hex literal.
    let n = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex.trim_end_matches(['u', 'i']), 16)
            .ok()
            .map(|v| v as f64),
        None => value.trim_end_matches(['u', 'i', 'f']).parse().ok(),
    };
    n.unwrap_or_else(|| panic!("`{line}` is not a plain number"))
}

/// Size in bytes of `struct NAME { ... }` in `src` under WGSL's layout rules
/// (fields of 32-bit scalars, `vec2/3/4` and fixed arrays of them; the size
/// rounded up to the struct's alignment): what a `#[repr(C)]` Rust copy of
/// it must measure.
pub(crate) fn struct_size(src: &str, name: &str) -> usize {
    let head = format!("struct {name} {{");
    let at = src
        .find(&head)
        .unwrap_or_else(|| panic!("no `{head}` in the shader"));
    let body = &src[at + head.len()..];
    let body = &body[..body.find('}').expect("closing brace")];
    let (mut size, mut align) = (0usize, 4usize);
    for line in body.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        let Some((_, ty)) = line.split_once(':') else {
            continue;
        };
        let (s, a) = type_layout(ty.trim().trim_end_matches(','));
        size = size.next_multiple_of(a) + s;
        align = align.max(a);
    }
    size.next_multiple_of(align)
}

/// Size and alignment of a field type.
fn type_layout(ty: &str) -> (usize, usize) {
    if let Some(inner) = ty.strip_prefix("array<").and_then(|t| t.strip_suffix('>')) {
        let (elem, count) = inner.rsplit_once(',').expect("fixed-size array");
        let (s, a) = type_layout(elem.trim());
        let n: usize = count.trim().trim_end_matches('u').parse().expect("count");
        return (s.next_multiple_of(a) * n, a);
    }
    match ty.split('<').next().unwrap_or(ty) {
        "u32" | "i32" | "f32" => (4, 4),
        "vec2" => (8, 8),
        "vec3" => (12, 16),
        "vec4" => (16, 16),
        other => panic!("field type {other} is not known to the layout check"),
    }
}

/// The `@workgroup_size(x[, y[, z]])` of entry point `entry` in `src`
/// (missing dimensions are 1).
pub(crate) fn workgroup_size(src: &str, entry: &str) -> [u32; 3] {
    let at = src
        .find(&format!("fn {entry}("))
        .unwrap_or_else(|| panic!("no entry point {entry} in the shader"));
    let attr = "@workgroup_size(";
    let start = src[..at]
        .rfind(attr)
        .unwrap_or_else(|| panic!("{entry} has no {attr}...)"))
        + attr.len();
    let args = &src[start..start + src[start..].find(')').expect("closing parenthesis")];
    let mut out = [1u32; 3];
    for (slot, a) in out.iter_mut().zip(args.split(',')) {
        let a = a.trim();
        *slot = a
            .trim_end_matches('u')
            .parse()
            .unwrap_or_else(|_| constant(src, a) as u32);
    }
    out
}

#[test]
fn parses_the_forms_the_shaders_use() {
    let src = "const A: u32 = 256u;\nconst B: u32 = 0xffffffffu; // x\nconst C: f32 = 1e-3;\n\
               struct P {\n    a: u32,\n    b: f32, // c\n    v: vec2<f32>,\n}\n";
    assert_eq!(constant(src, "A"), 256.0);
    assert_eq!(constant(src, "B"), u32::MAX as f64);
    assert_eq!(constant(src, "C"), 1e-3);
    assert_eq!(struct_size(src, "P"), 16);
    let src = "const W: u32 = 64u;\n@compute @workgroup_size(16, 16)\nfn a() {}\n\
               @compute @workgroup_size(W)\nfn b() {}\n";
    assert_eq!(workgroup_size(src, "a"), [16, 16, 1]);
    assert_eq!(workgroup_size(src, "b"), [64, 1, 1]);
}
