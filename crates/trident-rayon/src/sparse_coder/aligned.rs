//! Buffers that start on a cache line.
//!
//! The kernel's vector loops load whole 512-bit vectors from the rows of `U`,
//! `G` and `D` and from the correlations. A `Vec` of floats is only as
//! aligned as the allocator makes it (16 bytes here), so every such load
//! straddled two cache lines, which on the EPYC (Zen 5) box halved the
//! loads a cycle: the step's multiply-adds, one load each, ran at about
//! one a cycle instead of two. Alignment changes no result, only speed.

use std::ops::{Deref, DerefMut};

/// The alignment of the first element, in bytes: a cache line, one
/// AVX-512 vector.
const ALIGN: usize = 64;

/// `len` values in a `Vec` with room to spare, seen from the first element
/// at a 64-byte boundary (safe code: an offset into the `Vec`).
pub(super) struct Aligned<F> {
    buf: Vec<F>,
    off: usize,
    len: usize,
}

impl<F: Copy> Aligned<F> {
    /// `len` copies of `fill`.
    pub(super) fn new(len: usize, fill: F) -> Self {
        let mut buf = Vec::with_capacity(len + Self::spare());
        buf.resize(len + Self::spare(), fill);
        Self::place(buf, len)
    }

    /// [`Aligned::new`], or `None` where the memory cannot be had.
    pub(super) fn try_new(len: usize, fill: F) -> Option<Self> {
        let total = len.checked_add(Self::spare())?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(total).ok()?;
        buf.resize(total, fill);
        Some(Self::place(buf, len))
    }

    /// Grows to `len` values (new ones `fill`), keeping the present ones; at
    /// least doubles when it has to move. Shrinks by truncating.
    pub(super) fn resize(&mut self, len: usize, fill: F) {
        if len <= self.buf.len() - self.off {
            if len > self.len {
                self.buf[self.off + self.len..self.off + len].fill(fill);
            }
            self.len = len;
            return;
        }
        let mut next = Self::new(len.max(2 * self.len), fill);
        next.len = len;
        next[..self.len].copy_from_slice(self);
        *self = next;
    }

    /// Elements of slack that let the start move to a 64-byte boundary.
    fn spare() -> usize {
        ALIGN / std::mem::size_of::<F>().max(1)
    }

    fn place(buf: Vec<F>, len: usize) -> Self {
        // `align_offset` may answer that no offset works (`usize::MAX`):
        // then the buffer stays unaligned, which costs speed only.
        let off = buf.as_ptr().align_offset(ALIGN);
        let off = if off <= buf.len() - len { off } else { 0 };
        Self { buf, off, len }
    }
}

impl<F> Deref for Aligned<F> {
    type Target = [F];
    fn deref(&self) -> &[F] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl<F> DerefMut for Aligned<F> {
    fn deref_mut(&mut self) -> &mut [F] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::Aligned;

    #[test]
    fn starts_on_a_cache_line_and_keeps_values_when_grown() {
        let mut a = Aligned::new(3, 1.0f32);
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!(&a[..], &[1.0, 1.0, 1.0]);
        a[2] = 5.0;
        a.resize(1000, 2.0);
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!((a.len(), a[2], a[3], a[999]), (1000, 5.0, 2.0, 2.0));
        a.resize(2, 0.0);
        assert_eq!(&a[..], &[1.0, 1.0]);
        a.resize(4, 7.0);
        assert_eq!(&a[..], &[1.0, 1.0, 7.0, 7.0]);
        let b = Aligned::try_new(10, 0.0f64).unwrap();
        assert_eq!((b.as_ptr() as usize % 64, b.len()), (0, 10));
    }
}
