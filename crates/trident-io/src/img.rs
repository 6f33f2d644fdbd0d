//! Images through the `image` crate (PNG, JPEG): grey levels and scribble
//! seeds in, binary masks out (and each of them both ways, so every writer's
//! output reads back).
//!
//! The declared width and height are read first and checked against
//! [`MAX_PIXELS`], [`MAX_JPEG_SIDE`] and [`Limits`] before anything is decoded.
//!
//! ```
//! use trident_io::img::{self, Image, ImageFormat};
//! let mask = Image { width: 3, height: 2, pixels: vec![true, false, true, false, false, true] };
//! let mut png = Vec::new();
//! img::write_mask(&mut png, &mask, ImageFormat::Png).unwrap();
//! assert_eq!(img::read_mask(&png).unwrap(), mask);
//! ```

use std::io::{Cursor, Write};

use image::ImageEncoder;

use crate::{At, Error, Limits, Result};

/// Most pixels an input image may have (a grid graph has u32 node ids, and
/// each pixel of the cut takes several arrays of them).
pub const MAX_PIXELS: u64 = 1 << 28;

/// Longest side of a JPEG that is decoded (the format allows 65535).
pub const MAX_JPEG_SIDE: u32 = 65528;

/// A `width x height` raster, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image<P> {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// `width * height` pixels, row by row from the top.
    pub pixels: Vec<P>,
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

/// An image file format the writers produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG (lossless).
    Png,
    /// JPEG (lossy: a mask written as JPEG may not read back exactly).
    Jpeg,
}

impl ImageFormat {
    /// The format of a lower-case extension: `jpg`/`jpeg`, `png`.
    pub fn from_extension(ext: &str) -> Option<ImageFormat> {
        match ext {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }
}

/// Decodes `bytes` (format from its magic bytes), checking the declared size
/// first.
fn decode(bytes: &[u8], limits: &Limits) -> Result<image::DynamicImage> {
    let reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| Error::format(At::Byte(0), format!("cannot tell the image format: {e}")))?;
    let Some(format) = reader.format() else {
        return Err(Error::format(
            At::Byte(0),
            "not a PNG or JPEG image (unknown magic bytes)",
        ));
    };
    let cannot =
        |e: image::ImageError| Error::format(At::Data, format!("cannot decode the image: {e}"));
    let (w, h) = image::ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(cannot)?;
    // The JPEG decoder rounds each side up to whole 8-pixel blocks in 16 bits,
    // which overflows in its last 7 values: such a file is refused here.
    if format == image::ImageFormat::Jpeg && w.max(h) > MAX_JPEG_SIDE {
        return Err(Error::format(
            At::Header,
            format!("a {w} x {h} JPEG: sides above {MAX_JPEG_SIDE} are not decoded"),
        ));
    }
    let pixels = w as u64 * h as u64;
    if pixels > MAX_PIXELS {
        return Err(Error::format(
            At::Header,
            format!("{w} x {h} exceeds {MAX_PIXELS} pixels"),
        ));
    }
    // The decoded image and its RGB conversion: up to 16 bytes a pixel.
    limits.check(pixels as u128 * 16, At::Header, || {
        format!("decoding a {w} x {h} image")
    })?;
    let mut reader = reader;
    let mut l = image::Limits::default();
    l.max_alloc = Some(limits.max_alloc.min(MAX_PIXELS * 16));
    reader.limits(l);
    reader.decode().map_err(cannot)
}

/// Grey levels 0..=255 (colour converted as `image` does).
pub fn read_gray(bytes: &[u8]) -> Result<Image<u8>> {
    read_gray_with(bytes, &Limits::default())
}

/// [`read_gray`] under `limits`.
pub fn read_gray_with(bytes: &[u8], limits: &Limits) -> Result<Image<u8>> {
    let g = decode(bytes, limits)?.into_luma8();
    let (width, height) = g.dimensions();
    Ok(Image {
        width,
        height,
        pixels: g.into_raw(),
    })
}

/// RGB colour, 8 bits a channel (grey images come back with three equal
/// channels, alpha is dropped), for models that use colour.
pub fn read_rgb(bytes: &[u8]) -> Result<Image<[u8; 3]>> {
    read_rgb_with(bytes, &Limits::default())
}

/// [`read_rgb`] under `limits`.
pub fn read_rgb_with(bytes: &[u8], limits: &Limits) -> Result<Image<[u8; 3]>> {
    let img = decode(bytes, limits)?.into_rgb8();
    let (width, height) = img.dimensions();
    Ok(Image {
        width,
        height,
        pixels: img.pixels().map(|p| p.0).collect(),
    })
}

/// A binary mask: grey level >= 128 is `true` (foreground).
pub fn read_mask(bytes: &[u8]) -> Result<Image<bool>> {
    read_mask_with(bytes, &Limits::default())
}

/// [`read_mask`] under `limits`.
pub fn read_mask_with(bytes: &[u8], limits: &Limits) -> Result<Image<bool>> {
    let g = read_gray_with(bytes, limits)?;
    Ok(Image {
        width: g.width,
        height: g.height,
        pixels: g.pixels.iter().map(|&v| v >= 128).collect(),
    })
}

/// Seeds from a scribble image: red pixels (R >= 128, G and B < 100) mark the
/// foreground, blue pixels (B >= 128, R and G < 100) the background; anything
/// else (white, black, grey, a copy of the photo) is unmarked.
pub fn read_seeds(bytes: &[u8]) -> Result<Image<Seed>> {
    read_seeds_with(bytes, &Limits::default())
}

/// [`read_seeds`] under `limits`.
pub fn read_seeds_with(bytes: &[u8], limits: &Limits) -> Result<Image<Seed>> {
    let img = decode(bytes, limits)?.into_rgb8();
    let (width, height) = img.dimensions();
    let pixels = img
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
    Ok(Image {
        width,
        height,
        pixels,
    })
}

/// Encodes `raw` (`channels` bytes a pixel) in `format`.
fn encode(
    w: impl Write,
    width: u32,
    height: u32,
    len: usize,
    raw: &[u8],
    color: image::ExtendedColorType,
    format: ImageFormat,
) -> Result<()> {
    if width as u64 * height as u64 != len as u64 {
        return Err(trident_core::Error::dim(
            "pixels",
            format!("{len} pixels for a {width} x {height} image"),
        )
        .into());
    }
    let r = match format {
        ImageFormat::Png => {
            image::codecs::png::PngEncoder::new(w).write_image(raw, width, height, color)
        }
        ImageFormat::Jpeg => {
            image::codecs::jpeg::JpegEncoder::new(w).write_image(raw, width, height, color)
        }
    };
    r.map_err(|e| match e {
        image::ImageError::IoError(e) => Error::Io(e),
        e => Error::Io(std::io::Error::other(e)),
    })
}

/// Writes grey levels as an 8-bit grey image.
pub fn write_gray(w: impl Write, img: &Image<u8>, format: ImageFormat) -> Result<()> {
    let n = img.pixels.len();
    encode(
        w,
        img.width,
        img.height,
        n,
        &img.pixels,
        image::ExtendedColorType::L8,
        format,
    )
}

/// Writes a binary mask as an 8-bit grey image: 255 foreground, 0 background.
pub fn write_mask(w: impl Write, mask: &Image<bool>, format: ImageFormat) -> Result<()> {
    let raw: Vec<u8> = mask
        .pixels
        .iter()
        .map(|&f| if f { 255 } else { 0 })
        .collect();
    encode(
        w,
        mask.width,
        mask.height,
        raw.len(),
        &raw,
        image::ExtendedColorType::L8,
        format,
    )
}

/// Writes seeds as an RGB PNG scribble image that [`read_seeds`] reads back:
/// red foreground, blue background, white unmarked.
pub fn write_seeds(w: impl Write, seeds: &Image<Seed>) -> Result<()> {
    let raw: Vec<u8> = seeds
        .pixels
        .iter()
        .flat_map(|s| match s {
            Seed::None => [255, 255, 255],
            Seed::Foreground => [255, 0, 0],
            Seed::Background => [0, 0, 255],
        })
        .collect();
    encode(
        w,
        seeds.width,
        seeds.height,
        seeds.pixels.len(),
        &raw,
        image::ExtendedColorType::Rgb8,
        ImageFormat::Png,
    )
}
