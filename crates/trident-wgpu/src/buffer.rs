//! Device buffers: allocation with limit checks, host <-> device copies, and
//! the [`DeviceMemory`] implementation.
//!
//! Every buffer is a storage buffer that can also be copied from and to. Its
//! byte size is rounded up to a multiple of 4 (copies and bindings need it) and
//! is at least 16, so a buffer of zero elements is still a real, bindable
//! buffer; the padding is zero and never read back.

use std::marker::PhantomData;

use trident_core::{DeviceMemory, Element, Error, Result};
use wgpu::util::DeviceExt;

use crate::WgpuBackend;
use crate::context::failure;

/// `len` elements of `T` in device memory.
pub struct WgpuBuffer<T: Element> {
    pub(crate) raw: wgpu::Buffer,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> WgpuBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size of the elements in bytes (without the padding to 4).
    pub fn num_bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
    /// The wgpu buffer, to bind in a dispatch.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.raw
    }
    /// The same memory as `U` elements (the byte length must divide evenly):
    /// one scratch buffer for kernels of several element types, or an `f32`
    /// buffer behind a generic `T` that is known to be `f32`.
    pub fn cast<U: Element>(self) -> Result<WgpuBuffer<U>> {
        let bytes = self.num_bytes() as usize;
        let size = std::mem::size_of::<U>();
        if size == 0 || !bytes.is_multiple_of(size) {
            return Err(Error::dim(
                "buffer",
                format!("{bytes} bytes is not a whole number of {size}-byte elements"),
            ));
        }
        Ok(WgpuBuffer {
            raw: self.raw,
            len: bytes / size,
            _t: PhantomData,
        })
    }
    /// A borrowed view as `U` elements (same rule as [`WgpuBuffer::cast`]).
    pub fn cast_ref<U: Element>(&self) -> Result<WgpuBuffer<U>> {
        WgpuBuffer {
            raw: self.raw.clone(),
            len: self.len,
            _t: PhantomData::<fn() -> T>,
        }
        .cast()
    }
}

impl<T: Element> std::fmt::Debug for WgpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WgpuBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

/// Bytes a buffer of `bytes` content occupies: a multiple of 4, at least 16
/// (so that even an empty buffer binds where a shader expects one element
/// of up to a `vec4`).
fn padded(bytes: u64) -> u64 {
    bytes.max(16).next_multiple_of(4)
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl WgpuBackend {
    /// Byte size of `len` elements of `T`, checked against the adapter's
    /// `max_buffer_size`; `what` names the buffer in the error.
    fn checked_bytes<T: Element>(&self, len: usize, what: &str) -> Result<u64> {
        let bytes = (len as u128) * (std::mem::size_of::<T>() as u128);
        let limit = self.ctx.limits.max_buffer_size;
        if bytes > limit as u128 {
            return Err(Error::OutOfMemory {
                bytes: bytes.min(u64::MAX as u128) as u64,
                detail: format!(
                    "device buffer `{what}` exceeds this adapter's max_buffer_size of {limit} bytes"
                ),
            });
        }
        Ok(bytes as u64)
    }

    /// A new buffer of `len` elements whose contents are zero (wgpu zero-fills
    /// every new buffer); `what` names it in errors.
    pub fn alloc<T: Element>(&self, len: usize, what: &str) -> Result<WgpuBuffer<T>> {
        let bytes = self.checked_bytes::<T>(len, what)?;
        let raw = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: padded(bytes),
            usage: STORAGE,
            mapped_at_creation: false,
        });
        Ok(WgpuBuffer {
            raw,
            len,
            _t: PhantomData,
        })
    }

    /// Copies `host` into a new buffer; `what` names it in errors.
    pub fn upload_named<T: Element>(&self, host: &[T], what: &str) -> Result<WgpuBuffer<T>> {
        let bytes = self.checked_bytes::<T>(host.len(), what)?;
        let src: &[u8] = bytemuck::cast_slice(host);
        let raw = if padded(bytes) == bytes {
            self.ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(what),
                    contents: src,
                    usage: STORAGE,
                })
        } else {
            let mut v = src.to_vec();
            v.resize(padded(bytes) as usize, 0);
            self.ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(what),
                    contents: &v,
                    usage: STORAGE,
                })
        };
        Ok(WgpuBuffer {
            raw,
            len: host.len(),
            _t: PhantomData,
        })
    }

    /// A new buffer of `len` elements computed on the host by `fill`, which
    /// is called on consecutive blocks (with the index of the block's first
    /// element) from several threads and must set every element it is given;
    /// the first error, in element order, is returned. The buffer is mapped at
    /// creation and each block goes straight into the memory wgpu uploads
    /// from: host data converted on the way (i64 capacities to i32, say) needs
    /// no intermediate `Vec`, and the conversion runs on every core.
    pub fn upload_filled<T: Element>(
        &self,
        len: usize,
        what: &str,
        fill: impl Fn(usize, &mut [T]) -> Result<()> + Sync,
    ) -> Result<WgpuBuffer<T>> {
        let bytes = self.checked_bytes::<T>(len, what)?;
        let raw = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: padded(bytes),
            usage: STORAGE,
            mapped_at_creation: true,
        });
        let filled: Result<()> = (|| {
            let mut view = raw
                .slice(..)
                .get_mapped_range_mut()
                .map_err(|e| failure(what, e))?;
            let size = std::mem::size_of::<T>();
            // Whole blocks of BLOCK_BYTES go to the threads (wgpu's write-only
            // view of a fixed-size array can cross threads, a slice view
            // cannot); the tail, if any, is filled here.
            let per = if BLOCK_BYTES.is_multiple_of(size) {
                BLOCK_BYTES / size
            } else {
                0
            };
            let whole = view.slice(..bytes as usize);
            let (blocks, mut tail) = if per == 0 {
                (Vec::new(), whole)
            } else {
                let (b, t) = whole.into_chunks::<BLOCK_BYTES>();
                (b.into_iter().enumerate().collect::<Vec<_>>(), t)
            };
            let tail_first = blocks.len() * per;
            let run = |group: Vec<(usize, wgpu::WriteOnly<'_, [u8; BLOCK_BYTES]>)>| -> Result<()> {
                let mut block = vec![T::zeroed(); per];
                for (c, dst) in group {
                    fill(c * per, &mut block)?;
                    let mut dst: wgpu::WriteOnly<'_, [u8]> = dst.into();
                    dst.copy_from_slice(bytemuck::cast_slice(&block));
                }
                Ok(())
            };
            let threads = if len < PAR_MIN {
                1
            } else {
                std::thread::available_parallelism().map_or(1, |t| t.get())
            };
            let mut groups: Vec<Vec<_>> = Vec::with_capacity(threads);
            let mut it = blocks.into_iter();
            let share = (tail_first / per.max(1)).div_ceil(threads).max(1);
            loop {
                let g: Vec<_> = it.by_ref().take(share).collect();
                if g.is_empty() {
                    break;
                }
                groups.push(g);
            }
            let first_err = if groups.len() <= 1 {
                groups.into_iter().try_for_each(run)
            } else {
                std::thread::scope(|sc| {
                    let jobs: Vec<_> = groups
                        .into_iter()
                        .map(|g| sc.spawn(move || run(g)))
                        .collect();
                    jobs.into_iter().try_for_each(|j| {
                        j.join()
                            .map_err(|_| failure(what, "a host worker thread panicked"))?
                    })
                })
            };
            first_err?;
            let mut last = vec![T::zeroed(); len - tail_first];
            if !last.is_empty() {
                fill(tail_first, &mut last)?;
                tail.copy_from_slice(bytemuck::cast_slice(&last));
            }
            Ok(())
        })();
        raw.unmap();
        filled?;
        Ok(WgpuBuffer {
            raw,
            len,
            _t: PhantomData,
        })
    }

    /// Copies `host` into the start of an existing buffer (`host.len() <= buf.len()`),
    /// queued before the next submission.
    pub fn upload_into<T: Element>(&self, host: &[T], buf: &WgpuBuffer<T>) -> Result<()> {
        if host.len() > buf.len {
            return Err(Error::dim(
                "buf",
                format!("{} elements do not fit a buffer of {}", host.len(), buf.len),
            ));
        }
        let src: &[u8] = bytemuck::cast_slice(host);
        if src.is_empty() {
            return Ok(());
        }
        if src.len().is_multiple_of(4) {
            self.ctx.queue.write_buffer(&buf.raw, 0, src);
        } else {
            let mut v = src.to_vec();
            v.resize(src.len().next_multiple_of(4), 0);
            self.ctx.queue.write_buffer(&buf.raw, 0, &v);
        }
        Ok(())
    }

    /// A small uniform buffer holding `params` (a `#[repr(C)]` Pod struct whose
    /// layout matches the WGSL struct; padded to 16 bytes as uniforms need).
    pub fn uniform<P: bytemuck::Pod>(&self, params: &P) -> wgpu::Buffer {
        let src: &[u8] = bytemuck::bytes_of(params);
        let mut v = src.to_vec();
        v.resize(src.len().max(16).next_multiple_of(16), 0);
        self.ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &v,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    /// Copies the first `host.len()` elements of `buf` to the host and waits
    /// for it (`host.len() <= buf.len()`). Errors of earlier queued work
    /// surface here.
    pub fn download_into<T: Element>(&self, buf: &WgpuBuffer<T>, host: &mut [T]) -> Result<()> {
        if host.len() > buf.len {
            return Err(Error::dim(
                "host",
                format!(
                    "length {} but the device buffer holds {}",
                    host.len(),
                    buf.len
                ),
            ));
        }
        let n = std::mem::size_of_val(host) as u64;
        if n == 0 {
            return Ok(());
        }
        let size = padded(n);
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("download"),
            });
        enc.copy_buffer_to_buffer(&buf.raw, 0, &staging, 0, size);
        self.ctx.queue.submit([enc.finish()]);
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.ctx.wait("download")?;
        rx.recv()
            .map_err(|_| failure("download", "the map callback never ran"))?
            .map_err(|e| failure("download (map_async)", e))?;
        {
            let view = slice
                .get_mapped_range()
                .map_err(|e| failure("download (get_mapped_range)", e))?;
            let dst: &mut [u8] = bytemuck::cast_slice_mut(host);
            dst.copy_from_slice(&view[..n as usize]);
        }
        staging.unmap();
        Ok(())
    }

    /// Downloads a whole buffer into a new `Vec`.
    pub fn download_vec<T: Element>(&self, buf: &WgpuBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); buf.len];
        self.download_into(buf, &mut v)?;
        Ok(v)
    }
}

/// Below this many elements [`WgpuBackend::upload_filled`] runs on the
/// calling thread.
const PAR_MIN: usize = 1 << 16;
/// Bytes converted per step of [`WgpuBackend::upload_filled`] (a small
/// host buffer that stays in cache, then one copy into the mapped memory).
const BLOCK_BYTES: usize = 1 << 14;

impl DeviceMemory for WgpuBackend {
    type Buffer<T: Element> = WgpuBuffer<T>;

    fn upload<T: Element>(&self, host: &[T]) -> Result<WgpuBuffer<T>> {
        self.scoped("upload", || self.upload_named(host, "upload"))
    }

    fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<WgpuBuffer<T>> {
        self.scoped("alloc_zeroed", || self.alloc(len, "alloc_zeroed"))
    }

    fn download<T: Element>(&self, buf: &WgpuBuffer<T>, host: &mut [T]) -> Result<()> {
        if host.len() != buf.len {
            return Err(Error::dim(
                "host",
                format!(
                    "length {} but the device buffer holds {}",
                    host.len(),
                    buf.len
                ),
            ));
        }
        self.scoped("download", || self.download_into(buf, host))
    }

    fn buffer_len<T: Element>(&self, buf: &WgpuBuffer<T>) -> usize {
        buf.len
    }

    fn synchronize(&self) -> Result<()> {
        self.ctx.wait("synchronize")
    }
}
