//! Images through the `image` crate (PNG, JPEG): grey levels in, a binary mask
//! out.

use std::path::Path;

use crate::fail::{CliResult, bad_file};
use crate::io::output::Output;
use crate::progress::Progress;

/// Most pixels an input image may have (the grid has u32 node ids).
pub const MAX_PIXELS: u64 = 1 << 28;

/// Decodes `path` (format from its bytes), checking its declared size first.
pub fn read(path: &Path, progress: &Progress) -> CliResult<image::DynamicImage> {
    let bytes = super::read_all(path, progress)?;
    let reader = image::ImageReader::new(std::io::Cursor::new(&bytes))
        .with_guessed_format()
        .map_err(|e| bad_file(path, "byte 0", format!("cannot tell the image format: {e}")))?;
    if reader.format().is_none() {
        return Err(bad_file(
            path,
            "byte 0",
            "not a PNG or JPEG image (unknown magic bytes)",
        ));
    }
    let mut reader = reader;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_PIXELS * 16);
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| bad_file(path, "data", format!("cannot decode the image: {e}")))
}

/// Grey levels 0..=255, row-major, with the width and height.
pub fn read_gray(path: &Path, progress: &Progress) -> CliResult<(u32, u32, Vec<u8>)> {
    let img = read(path, progress)?;
    let g = img.to_luma8();
    let (w, h) = g.dimensions();
    if w as u64 * h as u64 > MAX_PIXELS {
        return Err(bad_file(
            path,
            "header",
            format!("{w} x {h} exceeds {MAX_PIXELS} pixels"),
        ));
    }
    Ok((w, h, g.into_raw()))
}

/// A seed label from a scribble image pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// Unmarked.
    None,
    /// Marked as foreground (red scribble).
    Foreground,
    /// Marked as background (blue scribble).
    Background,
}

/// Seeds from a scribble image: red pixels (R >= 128, G and B < 100) mark the
/// foreground, blue pixels (B >= 128, R and G < 100) the background; anything
/// else (white, black, grey, a copy of the photo) is unmarked.
pub fn read_seeds(path: &Path, progress: &Progress) -> CliResult<(u32, u32, Vec<Seed>)> {
    let img = read(path, progress)?.to_rgb8();
    let (w, h) = img.dimensions();
    let seeds = img
        .pixels()
        .map(|p| {
            let [r, g, b] = p.0;
            if r >= 128 && g < 100 && b < 100 {
                Seed::Foreground
            } else if b >= 128 && r < 100 && g < 100 {
                Seed::Background
            } else {
                Seed::None
            }
        })
        .collect();
    Ok((w, h, seeds))
}

/// Writes a binary mask as an 8-bit grey PNG: 255 foreground, 0 background.
pub fn write_mask(path: &Path, w: u32, h: u32, fg: &[bool]) -> CliResult<()> {
    let pixels: Vec<u8> = fg.iter().map(|&f| if f { 255 } else { 0 }).collect();
    let img = image::GrayImage::from_raw(w, h, pixels)
        .ok_or_else(|| crate::fail::Fail::Failed("internal: mask size mismatch".into()))?;
    let mut bytes = Vec::new();
    let out = Output::create(path)?;
    let format = match super::extension(path).as_str() {
        "jpg" | "jpeg" => image::ImageFormat::Jpeg,
        _ => image::ImageFormat::Png,
    };
    img.write_to(&mut std::io::Cursor::new(&mut bytes), format)
        .map_err(|e| out.fail(e))?;
    out.write_all_and_commit(&bytes)
}
