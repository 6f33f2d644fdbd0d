//! Host allocations that fail with an [`Error`] instead of aborting the process.
//!
//! Rust's `Vec` aborts when an allocation fails, and on Linux a request the
//! kernel grants lazily (overcommit) may instead kill the process later, when
//! the pages are touched. Both are worse than an error for a library, so every
//! allocation whose size comes from the caller's data (a row count, a node
//! count, an output's nnz) goes through here:
//!
//! 1. the byte count is computed with checked arithmetic ([`Error::TooLarge`]
//!    when it does not even fit `u64`);
//! 2. it is compared with [`host_memory_limit`], the machine's physical memory:
//!    a request larger than that can never be served, so it is
//!    [`Error::OutOfMemory`] at once rather than a gamble on overcommit;
//! 3. the allocation itself uses `try_reserve_exact`, so a refusal by the
//!    allocator is [`Error::OutOfMemory`] too.
//!
//! Requests below the machine's memory that still cannot be met (other
//! processes hold the rest) are outside what a library can see in advance.

use std::sync::OnceLock;

use crate::{Error, Result};

/// The machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`),
/// read once per process; `u64::MAX` where it cannot be read (other systems),
/// which leaves the decision to the allocator.
pub fn host_memory_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                kib.checked_mul(1024)
            })
            .unwrap_or(u64::MAX)
    })
}

/// Fails with [`Error::OutOfMemory`] when `bytes` exceed what this machine can
/// hold; `what` names the buffer (e.g. "CSR offsets of 2^40 rows").
pub fn check_bytes(bytes: u128, what: impl FnOnce() -> String) -> Result<()> {
    if bytes > host_memory_limit() as u128 {
        return Err(Error::OutOfMemory {
            bytes: bytes.min(u64::MAX as u128) as u64,
            detail: format!(
                "{} needs more than this machine's {} bytes of memory",
                what(),
                host_memory_limit()
            ),
        });
    }
    Ok(())
}

/// Bytes of `len` elements of `T`, as a `u128` (cannot overflow).
pub fn bytes_of<T>(len: usize) -> u128 {
    len as u128 * size_of::<T>() as u128
}

/// An empty `Vec` with room for exactly `len` elements, or
/// [`Error::OutOfMemory`] naming `what`.
pub fn with_capacity<T>(len: usize, what: impl Fn() -> String) -> Result<Vec<T>> {
    let bytes = bytes_of::<T>(len);
    check_bytes(bytes, &what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        bytes: bytes.min(u64::MAX as u128) as u64,
        detail: what(),
    })?;
    Ok(v)
}

/// `vec![value; len]`, or [`Error::OutOfMemory`] naming `what`.
///
/// ```
/// # use trident_core::mem::try_vec;
/// assert_eq!(try_vec(3, 0u32, || "demo".into()).unwrap(), vec![0, 0, 0]);
/// assert!(try_vec(usize::MAX / 2, 0u64, || "too much".into()).is_err());
/// ```
pub fn try_vec<T: Clone>(len: usize, value: T, what: impl Fn() -> String) -> Result<Vec<T>> {
    let mut v = with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// Grows `v` so that `extra` more elements fit, or [`Error::OutOfMemory`]
/// naming `what`; the check counts the whole resulting length.
pub fn reserve<T>(v: &mut Vec<T>, extra: usize, what: impl Fn() -> String) -> Result<()> {
    let total = v.len() as u128 + extra as u128;
    let bytes = total * size_of::<T>() as u128;
    check_bytes(bytes, &what)?;
    v.try_reserve(extra).map_err(|_| Error::OutOfMemory {
        bytes: bytes.min(u64::MAX as u128) as u64,
        detail: what(),
    })
}

/// Asks the kernel to back the spare capacity of `v` with transparent huge
/// pages, before anything is written to it.
///
/// A large fresh buffer (a 134 MB max-flow node array, a 400 MB SpGEMM
/// output, a download from a GPU) is faulted in one page at a time when it is
/// first written; on 4 KiB pages the faults cost about as much as the writes
/// themselves (a download into fresh memory ran at 5 GB/s against 32 GB/s
/// into touched memory on the H100 machine), and on 2 MiB pages they almost
/// vanish. Buffers under 8 MiB, systems other than Linux, THP switched off or
/// `TRIDENT_NO_HUGE_PAGES` set: nothing changes but speed.
pub fn advise_huge<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * size_of::<T>();
        if bytes < 4 * HUGE || std::env::var_os("TRIDENT_NO_HUGE_PAGES").is_some() {
            return;
        }
        let start = v.as_mut_ptr() as usize;
        let lo = start.next_multiple_of(HUGE);
        let hi = (start + bytes) / HUGE * HUGE;
        if hi > lo {
            // SAFETY: [lo, hi) lies inside the allocation owned by `v`;
            // MADV_HUGEPAGE changes no contents, only how pages are backed.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// An empty `Vec` with room for exactly `len` elements, its memory advised
/// onto huge pages ([`advise_huge`]) before anything is written to it: for a
/// download that writes the spare capacity straight (no zero fill first);
/// [`Error::OutOfMemory`] naming `what` when it cannot be had.
pub fn fresh_vec<T>(len: usize, what: impl Fn() -> String) -> Result<Vec<T>> {
    let mut v = with_capacity(len, what)?;
    advise_huge(&mut v);
    Ok(v)
}

/// Asks the kernel to fault in the whole pages of `[ptr, ptr + len)`
/// (elements) now, as if written, without changing any byte
/// (`MADV_POPULATE_WRITE`, Linux 5.14): a worker can fault in output pages
/// ahead of the workers that will write them, so that several never stall
/// on the same huge page. Pages already present are left as they are; on
/// other systems, older kernels or any error nothing happens (the writes
/// fault the pages in as usual). Returns whether the kernel did it.
///
/// # Safety
/// `[ptr, ptr + len)` must lie inside one live allocation.
pub unsafe fn populate<T>(ptr: *mut T, len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = ptr as usize;
        // Whole pages only: the partial pages at either end may extend
        // past the allocation, and are faulted by their writers.
        let lo = start.next_multiple_of(PAGE);
        let hi = (start + len * size_of::<T>()) / PAGE * PAGE;
        if hi <= lo {
            return false;
        }
        // SAFETY: [lo, hi) lies inside the caller's allocation; the advice
        // faults pages in without changing their contents.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (ptr, len);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice is only a hint: length, capacity and contents are
    /// untouched, for small, large and empty buffers.
    #[test]
    fn huge_page_advice_changes_nothing_visible() {
        for cap in [0usize, 10, 3 << 20] {
            let mut v: Vec<u32> = Vec::with_capacity(cap);
            v.extend((0..cap.min(1000)).map(|i| i as u32));
            let (len, c) = (v.len(), v.capacity());
            advise_huge(&mut v);
            assert_eq!((v.len(), v.capacity()), (len, c));
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        }
    }

    #[test]
    fn requests_beyond_the_machine_are_errors_naming_the_buffer() {
        let err = try_vec(usize::MAX / 8, 0u64, || "the test buffer".into()).unwrap_err();
        match err {
            Error::OutOfMemory { bytes, detail } => {
                assert!(bytes > 1 << 60);
                assert!(detail.contains("the test buffer"), "{detail}");
            }
            e => panic!("expected OutOfMemory, got {e}"),
        }
        let mut v = vec![1u8];
        assert!(reserve(&mut v, usize::MAX - 1, || "growth".into()).is_err());
        assert_eq!(v, [1]);
    }

    #[test]
    fn small_requests_succeed() {
        assert_eq!(
            with_capacity::<u32>(0, || "x".into()).unwrap().capacity(),
            0
        );
        assert_eq!(try_vec(2, 7u8, || "x".into()).unwrap(), [7, 7]);
        assert!(host_memory_limit() > 1 << 20);
    }

    /// Populating changes no byte, inside or at the partial pages around it.
    #[test]
    fn populate_changes_nothing_visible() {
        let mut v: Vec<u32> = (0..3 << 20).map(|i| i as u32 ^ 0x5a5a).collect();
        let want = v.clone();
        // SAFETY: both ranges lie inside `v`.
        unsafe {
            populate(v.as_mut_ptr().add(7), 1 << 20);
            populate(v.as_mut_ptr(), v.len());
        }
        assert_eq!(v, want);
        let mut fresh: Vec<u64> = Vec::with_capacity(1 << 20);
        // SAFETY: the spare capacity is one live allocation.
        unsafe { populate(fresh.as_mut_ptr(), fresh.capacity()) };
        fresh.extend(0..1 << 20);
        assert_eq!(fresh[12345], 12345);
    }
}
