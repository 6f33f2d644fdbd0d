//! The on-disk cache of compiled kernels.
//!
//! Why: compiling `kernels/*.cu` is the cost of a process's first call of
//! each primitive (measured on the H100 machine with the driver's own cache
//! emptied: 19.9 s before the first GEMM). NVRTC compiles each
//! module straight to a cubin for the device's `sm_XX` (no PTX left for the
//! driver to JIT), and the cubin is kept on disk, so later processes load it
//! in milliseconds.
//!
//! Where: `$TRIDENT_CACHE_DIR` if set (empty or `off` turns the disk cache
//! off), else `$XDG_CACHE_HOME/trident`, else `~/.cache/trident`.
//!
//! Entries are keyed by module name, architecture, NVRTC version, the compile
//! options and a hash of the source, so a changed kernel or a new NVRTC never
//! loads an old cubin. Each file carries its key and a checksum of its
//! payload: a truncated, corrupt or mismatched file is recompiled and
//! replaced. Files are written to a temporary name and renamed, so a reader
//! never sees half a file. A directory that cannot be written is tolerated:
//! kernels are compiled in memory and one `tracing` warning is emitted per process.
//!
//! The compiler is a trait (`Compiler`) so all of this is tested without a
//! GPU.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use trident_core::Result;

/// The environment variable naming the cache directory (`off` disables it).
pub const CACHE_ENV: &str = "TRIDENT_CACHE_DIR";

const MAGIC: &[u8] = b"TRIDENT-KERNEL-CACHE 1\n";

/// Turns kernel source into a loadable image for an architecture.
pub(crate) trait Compiler {
    /// Identifies the compiler in cache keys (e.g. `nvrtc-13.0`).
    fn version(&self) -> String;
    /// Options that change the output (part of the key).
    fn options(&self, arch: &str) -> Vec<String>;
    /// Compiles module `name` for `arch` with [`Compiler::options`].
    fn compile(&self, name: &str, source: &str, arch: &str) -> Result<Vec<u8>>;
}

/// How an image was obtained (tests and traces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Read from the disk cache.
    Hit,
    /// Compiled and stored (the entry was missing, stale or corrupt).
    Stored,
    /// Compiled but not stored (no cache directory, or it is not writable).
    Uncached,
}

/// A module's image and where it came from.
pub(crate) type Compiled = Result<(Vec<u8>, Outcome)>;

/// 64-bit FNV-1a: a stable hash (unlike `std`'s, fixed across Rust
/// versions), enough to name entries; each entry also stores its full key.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separate the parts, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A cache directory (or none) and whether its warning was printed.
#[derive(Debug)]
pub struct DiskCache {
    dir: Option<PathBuf>,
    warned: AtomicBool,
}

impl DiskCache {
    /// The cache at `dir` (`None`: compile in memory only).
    pub fn at(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            warned: AtomicBool::new(false),
        }
    }

    /// The directory chosen from the environment (see the module docs).
    pub fn from_env() -> Self {
        let v = std::env::var_os;
        Self::at(dir_from(v(CACHE_ENV), v("XDG_CACHE_HOME"), v("HOME")))
    }

    /// The directory in use, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn key(c: &dyn Compiler, name: &str, source: &str, arch: &str) -> String {
        let opts = c.options(arch).join(" ");
        format!(
            "{name} {arch} {} opts-{:016x} src-{:016x}",
            c.version(),
            fnv1a(&[opts.as_bytes()]),
            fnv1a(&[source.as_bytes()])
        )
    }

    fn path(&self, key: &str, name: &str, arch: &str) -> Option<PathBuf> {
        // `module:entry` names become `module.entry` (no `:` in file names).
        let file = format!(
            "{}-{arch}-{:016x}.cubin",
            name.replace(':', "."),
            fnv1a(&[key.as_bytes()])
        );
        self.dir.as_ref().map(|d| d.join(file))
    }

    /// The image of module `name` for `arch`: from disk when a valid entry
    /// exists, else compiled (and stored when the directory allows).
    pub(crate) fn get_or_compile(
        &self,
        c: &dyn Compiler,
        name: &str,
        source: &str,
        arch: &str,
    ) -> Result<(Vec<u8>, Outcome)> {
        let key = Self::key(c, name, source, arch);
        let path = self.path(&key, name, arch);
        if let Some(image) = path.as_deref().and_then(|p| read_entry(p, &key)) {
            return Ok((image, Outcome::Hit));
        }
        let image = c.compile(name, source, arch)?;
        let outcome = match &path {
            Some(p) => match write_entry(p, &key, &image) {
                Ok(()) => Outcome::Stored,
                Err(e) => {
                    self.warn_once(&e);
                    Outcome::Uncached
                }
            },
            None => Outcome::Uncached,
        };
        Ok((image, outcome))
    }

    /// [`DiskCache::get_or_compile`] for each `(name, source)` of `jobs`, on up
    /// to one thread per core; the answers are in the order of `jobs`. Why:
    /// NVRTC compiles one module on one core, and a call that needs a dozen
    /// one-entry modules (SpGEMM's bins) would otherwise wait for them one
    /// after the other on a cold cache. NVRTC compiles distinct programs
    /// concurrently (its API is thread-safe); entries are written under
    /// distinct temporary names, then renamed.
    pub(crate) fn get_or_compile_all(
        &self,
        c: &(dyn Compiler + Sync),
        jobs: &[(String, std::borrow::Cow<'_, str>)],
        arch: &str,
    ) -> Vec<Compiled> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(jobs.len());
        if threads <= 1 {
            return jobs
                .iter()
                .map(|(name, src)| self.get_or_compile(c, name, src, arch))
                .collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<Option<Compiled>> = jobs.iter().map(|_| None).collect();
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((name, src)) = jobs.get(i) else {
                                return done;
                            };
                            done.push((i, self.get_or_compile(c, name, src, arch)));
                        }
                    })
                })
                .collect();
            for w in workers {
                // A worker that panicked leaves its jobs `None` (answered below).
                for (i, r) in w.join().unwrap_or_default() {
                    out[i] = Some(r);
                }
            }
        });
        out.into_iter()
            .zip(jobs)
            .map(|(r, (name, _))| {
                r.unwrap_or_else(|| {
                    Err(trident_core::Error::Backend(
                        format!("the thread compiling kernel module {name} panicked").into(),
                    ))
                })
            })
            .collect()
    }

    /// Compiles afresh and replaces the entry: for an image read from disk
    /// that the driver refused (a checksum cannot catch every bad file).
    pub(crate) fn recompile(
        &self,
        c: &dyn Compiler,
        name: &str,
        source: &str,
        arch: &str,
    ) -> Result<Vec<u8>> {
        let key = Self::key(c, name, source, arch);
        let image = c.compile(name, source, arch)?;
        if let Some(p) = self.path(&key, name, arch)
            && let Err(e) = write_entry(&p, &key, &image)
        {
            self.warn_once(&e);
        }
        Ok(image)
    }

    fn warn_once(&self, e: &std::io::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                dir = %self.dir.as_deref().map_or("-".into(), |d| d.display().to_string()),
                error = %e,
                "the kernel cache cannot be written; kernels are compiled in memory for \
                 this process (set {CACHE_ENV} to a writable directory, or to `off`)"
            );
        }
    }
}

/// The cache every backend of this process uses (one warning per process).
pub(crate) fn process_cache() -> &'static DiskCache {
    static CACHE: std::sync::OnceLock<DiskCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(DiskCache::from_env)
}

/// The cache directory for the values of `TRIDENT_CACHE_DIR`,
/// `XDG_CACHE_HOME` and `HOME` (see the module docs).
fn dir_from(
    cache: Option<std::ffi::OsString>,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let set = |v: Option<std::ffi::OsString>| v.filter(|v| !v.is_empty());
    match cache {
        Some(v) if v.is_empty() || v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => set(xdg)
            .map(|x| PathBuf::from(x).join("trident"))
            .or_else(|| set(home).map(|h| PathBuf::from(h).join(".cache").join("trident"))),
    }
}

/// The payload of the entry at `path` if it is whole and carries `key`.
fn read_entry(path: &Path, key: &str) -> Option<Vec<u8>> {
    let data = std::fs::read(path).ok()?;
    let rest = data.strip_prefix(MAGIC)?;
    let rest = rest.strip_prefix(key.as_bytes())?.strip_prefix(b"\n")?;
    if rest.len() < 16 {
        return None;
    }
    let (head, payload) = rest.split_at(16);
    let len = u64::from_le_bytes(head[..8].try_into().ok()?);
    let sum = u64::from_le_bytes(head[8..].try_into().ok()?);
    (payload.len() as u64 == len && fnv1a(&[payload]) == sum).then(|| payload.to_vec())
}

/// Writes the entry to a temporary file in the same directory, then renames
/// it over `path` (atomic on one file system).
fn write_entry(path: &Path, key: &str, payload: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("cache path has no directory"))?;
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(
        ".{}.{}.{nanos}.tmp",
        path.file_name()
            .map_or("entry".into(), |f| f.to_string_lossy()),
        std::process::id()
    ));
    let mut data = Vec::with_capacity(MAGIC.len() + key.len() + 17 + payload.len());
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(key.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    data.extend_from_slice(&fnv1a(&[payload]).to_le_bytes());
    data.extend_from_slice(payload);
    let r = std::fs::write(&tmp, &data).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Compiles by reversing the source; counts its runs.
    struct Fake {
        runs: AtomicUsize,
        version: &'static str,
    }

    impl Fake {
        fn new() -> Self {
            Fake {
                runs: AtomicUsize::new(0),
                version: "fake-1",
            }
        }
    }

    impl Compiler for Fake {
        fn version(&self) -> String {
            self.version.into()
        }
        fn options(&self, arch: &str) -> Vec<String> {
            vec![format!("--arch={arch}")]
        }
        fn compile(&self, _name: &str, source: &str, arch: &str) -> Result<Vec<u8>> {
            self.runs.fetch_add(1, Ordering::Relaxed);
            let mut v: Vec<u8> = source.bytes().rev().collect();
            v.extend_from_slice(arch.as_bytes());
            Ok(v)
        }
    }

    fn only_entry(dir: &Path) -> PathBuf {
        let files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    #[test]
    fn miss_then_hit() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::at(Some(tmp.path().join("trident")));
        let c = Fake::new();
        let (a, o) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        assert_eq!((a.as_slice(), o), (&b"cbasm_90"[..], Outcome::Stored));
        let (b, o) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        assert_eq!((b, o), (a, Outcome::Hit));
        assert_eq!(c.runs.load(Ordering::Relaxed), 1, "the hit did not compile");
        // A fresh handle (another process) hits the same entry.
        let again = DiskCache::at(Some(tmp.path().join("trident")));
        assert_eq!(
            again.get_or_compile(&c, "k", "abc", "sm_90").unwrap().1,
            Outcome::Hit
        );
        // One entry, no temporary file left behind.
        only_entry(&tmp.path().join("trident"));
    }

    #[test]
    fn source_arch_and_compiler_version_are_in_the_key() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::at(Some(tmp.path().to_path_buf()));
        let mut c = Fake::new();
        cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        for (src, arch) in [("abd", "sm_90"), ("abc", "sm_80")] {
            let (_, o) = cache.get_or_compile(&c, "k", src, arch).unwrap();
            assert_eq!(o, Outcome::Stored, "{src} {arch}");
        }
        c.version = "fake-2";
        let (_, o) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        assert_eq!(o, Outcome::Stored, "a new compiler version recompiles");
        assert_eq!(c.runs.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn corrupt_or_stale_entries_are_recompiled() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::at(Some(tmp.path().to_path_buf()));
        let c = Fake::new();
        let (good, _) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        let path = only_entry(tmp.path());
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut stale = whole.clone();
        let at = MAGIC.len();
        stale[at] ^= 1; // the stored key no longer matches
        for (what, bytes) in [
            ("truncated", whole[..whole.len() - 3].to_vec()),
            ("flipped payload bit", flipped),
            ("stale key", stale),
            ("empty", Vec::new()),
            ("garbage", b"not a cache entry".to_vec()),
        ] {
            std::fs::write(&path, bytes).unwrap();
            let runs = c.runs.load(Ordering::Relaxed);
            let (img, o) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
            assert_eq!((&img, o), (&good, Outcome::Stored), "{what}");
            assert_eq!(
                c.runs.load(Ordering::Relaxed),
                runs + 1,
                "{what}: recompiled"
            );
            assert_eq!(std::fs::read(&path).unwrap(), whole, "{what}: replaced");
        }
        // An image the driver refused is recompiled and rewritten.
        assert_eq!(cache.recompile(&c, "k", "abc", "sm_90").unwrap(), good);
    }

    #[test]
    fn an_unwritable_directory_compiles_in_memory() {
        let tmp = tempfile::tempdir().unwrap();
        // A directory below a regular file can never be created (this holds
        // even for root, whom permission bits do not stop).
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let cache = DiskCache::at(Some(file.join("trident")));
        let c = Fake::new();
        for _ in 0..2 {
            let (img, o) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
            assert_eq!((img.as_slice(), o), (&b"cbasm_90"[..], Outcome::Uncached));
        }
        assert!(cache.warned.load(Ordering::Relaxed));
        assert_eq!(c.runs.load(Ordering::Relaxed), 2);
        // No directory at all: in memory, silently.
        let none = DiskCache::at(None);
        assert_eq!(
            none.get_or_compile(&c, "k", "abc", "sm_90").unwrap().1,
            Outcome::Uncached
        );
        assert!(!none.warned.load(Ordering::Relaxed));
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_directory_still_serves_its_entries() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ro");
        let cache = DiskCache::at(Some(dir.clone()));
        let c = Fake::new();
        let (img, _) = cache.get_or_compile(&c, "k", "abc", "sm_90").unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Another process (a fresh handle) reads the entry without writing.
        let ro = DiskCache::at(Some(dir.clone()));
        assert_eq!(
            ro.get_or_compile(&c, "k", "abc", "sm_90").unwrap(),
            (img, Outcome::Hit)
        );
        // A new module compiles; it is stored only where the permission
        // bits bind (they do not for root).
        let bound = std::fs::write(dir.join("probe"), b"x").is_err();
        let (_, o) = ro.get_or_compile(&c, "k2", "xyz", "sm_90").unwrap();
        if bound {
            assert_eq!(o, Outcome::Uncached);
            assert!(ro.warned.load(Ordering::Relaxed));
        }
        assert_eq!(c.runs.load(Ordering::Relaxed), 2);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_environment_picks_the_directory() {
        let p = |s: &str| Some(std::ffi::OsString::from(s));
        let d = |e, x, h| dir_from(e, x, h).map(|d| d.display().to_string());
        assert_eq!(d(p("/c"), p("/x"), p("/h")), Some("/c".into()));
        assert_eq!(d(p("off"), p("/x"), p("/h")), None);
        assert_eq!(d(p(""), p("/x"), p("/h")), None);
        assert_eq!(d(None, p("/x"), p("/h")), Some("/x/trident".into()));
        assert_eq!(d(None, p(""), p("/h")), Some("/h/.cache/trident".into()));
        assert_eq!(d(None, None, None), None);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }

    #[test]
    fn many_modules_compile_in_parallel_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = DiskCache::at(Some(tmp.path().join("trident")));
        let c = Fake::new();
        let jobs: Vec<(String, std::borrow::Cow<'_, str>)> = (0..9)
            .map(|i| (format!("m:e{i}"), format!("src{i}").into()))
            .collect();
        let first = cache.get_or_compile_all(&c, &jobs, "sm_90");
        assert_eq!(c.runs.load(Ordering::Relaxed), 9);
        for (i, r) in first.iter().enumerate() {
            let (image, o) = r.as_ref().unwrap();
            let want: Vec<u8> = format!("src{i}").bytes().rev().chain(*b"sm_90").collect();
            assert_eq!((image, *o), (&want, Outcome::Stored), "job {i}");
        }
        // Nine entries, no temporary file left; a second pass only reads.
        let n = std::fs::read_dir(tmp.path().join("trident"))
            .unwrap()
            .count();
        assert_eq!(n, 9);
        let again = cache.get_or_compile_all(&c, &jobs, "sm_90");
        assert!(again.iter().all(|r| r.as_ref().unwrap().1 == Outcome::Hit));
        assert_eq!(c.runs.load(Ordering::Relaxed), 9);
        assert!(cache.get_or_compile_all(&c, &[], "sm_90").is_empty());
    }
}
