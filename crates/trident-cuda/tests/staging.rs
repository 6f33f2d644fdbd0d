//! The pinned staging pool on the device: large uploads and
//! downloads of every size class (below the staged threshold, one partial
//! chunk, many chunks with a ragged end) arrive intact, the pool's buffers
//! are reused by later copies instead of pinned again, its bound holds, and
//! releasing it frees the idle buffers and leaves the backend usable. The
//! pool's bookkeeping alone is unit-tested without a GPU in `src/staging.rs`.
//! Skipped (with a SKIPPED line) where there is no CUDA device.

mod common;

use trident_core::DeviceMemory;

use common::backend;

/// `n` words whose values say where they are (a misplaced chunk shows).
fn pattern(n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5a5a)
        .collect()
}

#[test]
fn staged_copies_round_trip_and_reuse_the_pool() {
    let Some(be) = backend("staged_copies_round_trip_and_reuse_the_pool") else {
        return;
    };
    const MIB: usize = 1 << 20;
    // In u32 words: under the staged threshold, one partial chunk, exactly
    // one chunk, and many chunks with a ragged tail.
    for words in [1000, MIB / 4 + 3, MIB, 37 * MIB / 4 + 5] {
        let host = pattern(words);
        let buf = be.upload(&host).unwrap();
        let mut back = vec![0u32; words];
        be.download(&buf, &mut back).unwrap();
        assert!(back == host, "round trip of {words} words");
        assert!(
            be.download_vec(&buf).unwrap() == host,
            "download_vec of {words} words"
        );
    }
    let s = be.staging_stats().unwrap();
    assert!(s.live >= 1, "large copies were staged: {s:?}");
    assert!(
        s.live <= trident_cuda::staging::POOL_BUFFERS,
        "the pool's bound: {s:?}"
    );
    assert_eq!(s.idle, s.live, "every buffer went back: {s:?}");
    // The same copies again pin nothing new.
    let host = pattern(37 * MIB / 4 + 5);
    let buf = be.upload(&host).unwrap();
    assert!(be.download_vec(&buf).unwrap() == host);
    assert_eq!(be.staging_stats().unwrap().allocations, s.allocations);
    // Release frees the idle buffers; the next copy pins again and works.
    assert_eq!(be.release_staging().unwrap(), s.live);
    let r = be.staging_stats().unwrap();
    assert_eq!((r.live, r.idle), (0, 0));
    assert!(be.download_vec(&buf).unwrap() == host);
    assert!(be.staging_stats().unwrap().allocations > s.allocations);
}

#[test]
fn concurrent_staged_copies_stay_within_the_bound() {
    let Some(be) = backend("concurrent_staged_copies_stay_within_the_bound") else {
        return;
    };
    let host = pattern(5 << 20);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..3 {
                    let buf = be.upload(&host).unwrap();
                    assert!(be.download_vec(&buf).unwrap() == host);
                }
            });
        }
    });
    let st = be.staging_stats().unwrap();
    assert!(
        st.live <= trident_cuda::staging::POOL_BUFFERS && st.idle == st.live,
        "{st:?}"
    );
}
