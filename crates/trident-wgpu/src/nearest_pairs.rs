//! NearestPairs for [`WgpuBackend`]: `shaders/nearest_pairs.wgsl`.
//!
//! An exact exhaustive search on the device (B streamed through workgroup
//! memory; see the shader's header), O(|A| |B|): correct for every input, fast
//! only for moderate sizes. The uniform grid with shell expansion of the CUDA
//! backend is not ported yet. `knn` keeps up to [`KNN_MAX_K`] neighbours per
//! query in registers; a larger `k` answers [`Error::Unsupported`].
//! `closest_pairs` runs `nearest` on the device, downloads the |A| answers
//! (8 bytes each) and selects the k smallest `(d2, a)` on the host.

use trident_core::{
    Error, NearestPairs, NearestPairsDevice, Neighbor, Pair, Point, Result, validate,
};

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::pipeline::{Arg, Bind, Kernel, Shader};

/// `shaders/nearest_pairs.wgsl`.
static SHADER: Shader = Shader {
    name: "nearest_pairs",
    parts: &[include_str!("../shaders/nearest_pairs.wgsl")],
};

const BINDS: &[Bind] = &[Bind::Read, Bind::Read, Bind::ReadWrite, Bind::Uniform];

static NEAREST: Kernel = Kernel {
    shader: &SHADER,
    entry: "nearest_f32",
    bindings: BINDS,
};

static KNN: Kernel = Kernel {
    shader: &SHADER,
    entry: "knn_f32",
    bindings: BINDS,
};

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[&NEAREST, &KNN];

/// Largest `k` the device `knn` keeps per query (`KMAX` in the shader).
pub const KNN_MAX_K: usize = 64;

/// Queries per workgroup (`WG` in the shader).
const WG: u64 = 128;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    na: u32,
    nb: u32,
    k: u32,
    _pad: u32,
}

fn count(field: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        field,
        value: n as u128,
        limit: u32::MAX as u128,
    })
}

impl WgpuBackend {
    /// Queues `kernel` over `na` queries against `nb` points.
    fn launch_pairs(
        &self,
        kernel: &'static Kernel,
        a: (&WgpuBuffer<Point>, usize),
        b: (&WgpuBuffer<Point>, usize),
        k: usize,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        if a.1 == 0 {
            return Ok(());
        }
        let params = self.uniform(&Params {
            na: count("|A|", a.1)?,
            nb: count("|B|", b.1)?,
            k: count("k", k)?,
            _pad: 0,
        });
        let fa = a.0.cast_ref::<f32>()?;
        let fb = b.0.cast_ref::<f32>()?;
        let mut enc = self.encoder("nearest_pairs");
        enc.dispatch(
            kernel,
            &[
                Arg::buf(&fa),
                Arg::buf(&fb),
                Arg::buf(out),
                Arg::raw(&params),
            ],
            self.grid((a.1 as u64).div_ceil(WG))?,
        )?;
        enc.submit();
        Ok(())
    }

    /// The k smallest `(d2, a)` of the per-query nearest answers.
    fn select_pairs(near: &[Neighbor], k: usize) -> Vec<Pair> {
        let mut all: Vec<Pair> = near
            .iter()
            .enumerate()
            .map(|(i, n)| Pair {
                a: i as u32,
                b: n.index,
                d2: n.d2,
            })
            .collect();
        let cmp = |x: &Pair, y: &Pair| x.d2.total_cmp(&y.d2).then(x.a.cmp(&y.a));
        let k = k.min(all.len());
        if k < all.len() {
            all.select_nth_unstable_by(k, cmp);
            all.truncate(k);
        }
        all.sort_unstable_by(cmp);
        all
    }
}

impl NearestPairs for WgpuBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        validate::nearest(a, b, out)?;
        if a.is_empty() {
            return Ok(());
        }
        self.scoped("nearest", || {
            let da = self.upload_named(a, "points A")?;
            let db = self.upload_named(b, "points B")?;
            let dout = self.alloc::<Neighbor>(a.len(), "nearest out")?;
            self.launch_pairs(&NEAREST, (&da, a.len()), (&db, b.len()), 1, &dout)?;
            self.download_into(&dout, out)
        })
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        if k > KNN_MAX_K {
            return Err(Error::Unsupported(format!(
                "knn with k = {k} on wgpu: the device keeps at most {KNN_MAX_K} neighbours per query"
            )));
        }
        self.scoped("knn", || {
            let da = self.upload_named(a, "points A")?;
            let db = self.upload_named(b, "points B")?;
            let dout = self.alloc::<Neighbor>(out.len(), "knn out")?;
            self.launch_pairs(&KNN, (&da, a.len()), (&db, b.len()), k, &dout)?;
            self.download_into(&dout, out)
        })
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        validate::closest_pairs(a, b)?;
        if a.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        self.scoped("closest_pairs", || {
            let da = self.upload_named(a, "points A")?;
            let db = self.upload_named(b, "points B")?;
            self.closest_pairs_on_device(&da, &db, k)
        })
    }
}

impl WgpuBackend {
    fn closest_pairs_on_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        if a.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let near = self.alloc::<Neighbor>(a.len(), "closest_pairs nearest")?;
        self.launch_pairs(&NEAREST, (a, a.len()), (b, b.len()), 1, &near)?;
        let host = self.download_vec(&near)?;
        Ok(Self::select_pairs(&host, k))
    }
}

fn check_b(b: &WgpuBuffer<Point>) -> Result<()> {
    if b.is_empty() {
        return Err(Error::arg("b", "B is empty: there is no nearest point"));
    }
    Ok(())
}

impl NearestPairsDevice for WgpuBackend {
    fn nearest_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        out: &mut WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        check_b(b)?;
        if out.len() != a.len() {
            return Err(Error::dim(
                "out",
                format!("length {}, expected |A| = {}", out.len(), a.len()),
            ));
        }
        self.scoped("nearest_device", || {
            self.launch_pairs(&NEAREST, (a, a.len()), (b, b.len()), 1, out)
        })
    }

    fn closest_pairs_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        check_b(b)?;
        self.scoped("closest_pairs_device", || {
            self.closest_pairs_on_device(a, b, k)
        })
    }
}
