//! Exclusive prefix sums of `u32` on the device (`shaders/scan.wgsl`), shared
//! by the primitives that size their output from per-row counts.

use trident_core::Result;

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::pipeline::{Arg, Bind, Encoder, Kernel, Shader};

/// `shaders/scan.wgsl`.
pub(crate) static SHADER: Shader = Shader {
    name: "scan",
    parts: &[include_str!("../shaders/scan.wgsl")],
};

const BINDS: &[Bind] = &[Bind::ReadWrite, Bind::ReadWrite, Bind::Uniform];

static SCAN_BLOCKS: Kernel = Kernel {
    shader: &SHADER,
    entry: "scan_blocks",
    bindings: BINDS,
};

static SCAN_ADD: Kernel = Kernel {
    shader: &SHADER,
    entry: "scan_add",
    bindings: BINDS,
};

/// Kernels of the scan (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[&SCAN_BLOCKS, &SCAN_ADD];

/// Elements one workgroup scans (`SCAN_BLOCK` in the shader).
const BLOCK: usize = 1024;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ScanParams {
    n: u32,
    _pad: [u32; 3],
}

impl WgpuBackend {
    /// Records an in-place exclusive prefix sum of the first `n` elements of
    /// `data` (`n <= data.len()`, `n < 2^32`) into `enc`. With `n = rows + 1`
    /// and a trailing zero count, `data[rows]` becomes the total.
    pub fn scan_exclusive_u32(
        &self,
        enc: &mut Encoder<'_>,
        data: &WgpuBuffer<u32>,
        n: usize,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let n32 = u32::try_from(n).map_err(|_| trident_core::Error::TooLarge {
            field: "scan length",
            value: n as u128,
            limit: u32::MAX as u128,
        })?;
        let blocks = n.div_ceil(BLOCK);
        // Every block writes its sum: a pooled buffer needs no zero fill.
        let sums = self.alloc_uninit::<u32>(blocks, "scan block sums")?;
        let params = self.uniform(&ScanParams {
            n: n32,
            _pad: [0; 3],
        });
        let grid = self.grid(blocks as u64)?;
        let args = [Arg::buf(data), Arg::buf(&sums), Arg::raw(&params)];
        enc.dispatch(&SCAN_BLOCKS, &args, grid)?;
        if blocks > 1 {
            self.scan_exclusive_u32(enc, &sums, blocks)?;
            enc.dispatch(&SCAN_ADD, &args, grid)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size, workgroup_size};

    /// The block and uniform-block layout this file repeats from
    /// `shaders/scan.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/scan.wgsl");
        assert_eq!(constant(src, "SCAN_BLOCK"), BLOCK as f64);
        assert_eq!(
            constant(src, "SCAN_WG") * constant(src, "SCAN_PER"),
            BLOCK as f64
        );
        let wg = constant(src, "SCAN_WG") as u32;
        for k in KERNELS {
            assert_eq!(workgroup_size(src, k.entry), [wg, 1, 1], "{}", k.entry);
        }
        assert_eq!(
            struct_size(src, "ScanParams"),
            std::mem::size_of::<ScanParams>()
        );
    }
}
