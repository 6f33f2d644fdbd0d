//! Shaders, compute pipelines built once per device and cached, and the
//! recording of dispatches.
//!
//! A [`Shader`] is the text of one or more files of `shaders/` (embedded with
//! `include_str!`; shared helpers such as `scan.wgsl` come first in `parts`).
//! A [`Kernel`] is one entry point of a shader together with its bindings, all
//! in group 0 at indices 0, 1, 2, ... in the order of `bindings`. The pipeline
//! layout is built from that list (not derived from the shader), so an entry
//! point may leave some of its group's bindings unused.
//!
//! Shader text goes through a tiny preprocessor before compiling: lines between
//! `// #if NAME` and `// #else` are kept when the device defines `NAME`,
//! lines between `// #else` and `// #endif` when it does not. Directives do
//! not nest. Names (`Context::defines`):
//! `SUBGROUPS`, the device has the `subgroups` feature; `SUBGROUP32`, and
//! every subgroup has 32 invocations (NVIDIA, AMD RDNA in wave32), so code
//! may treat a subgroup as a warp.
//!
//! A shader whose text holds the line `// #unchecked` is built without the
//! checks wgpu adds to shaders (index clamping on every array access and a
//! counter on every loop, which kept the GEMM's inner loop from being
//! unrolled) and without zero-filling workgroup memory. Its author vouches
//! that every index is in range, every loop terminates and no workgroup
//! memory is read before it is written; the shader file says why.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use trident_core::{Element, Error, Result};

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::context::CallScope;
use crate::error::failure;

/// A WGSL program made of files of `shaders/`.
#[derive(Debug)]
pub struct Shader {
    /// Cache key and name in errors (the main file's stem).
    pub name: &'static str,
    /// The files, concatenated in this order.
    pub parts: &'static [&'static str],
}

/// How an entry point sees one binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
    /// `var<uniform>`.
    Uniform,
}

/// One entry point of a shader and its group-0 bindings.
#[derive(Debug)]
pub struct Kernel {
    /// The shader holding it.
    pub shader: &'static Shader,
    /// The `@compute` function's name.
    pub entry: &'static str,
    /// Binding `i` of group 0 is `bindings[i]`.
    pub bindings: &'static [Bind],
}

/// A compiled kernel.
pub(crate) struct Compiled {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// A cache slot: the built item, or the message of its build failure.
type Slot<T> = std::result::Result<T, String>;

/// A kernel's cache key: (shader name, entry point).
type KernelKey = (&'static str, &'static str);

/// Compiled shader modules and pipelines of one device.
///
/// A failure stays cached as its message: the source is fixed at build time,
/// so compiling again would give the same error.
#[derive(Default)]
pub(crate) struct PipelineCache {
    modules: RwLock<HashMap<&'static str, Slot<wgpu::ShaderModule>>>,
    pipelines: RwLock<HashMap<KernelKey, Slot<Arc<Compiled>>>>,
}

fn poisoned() -> Error {
    failure("pipeline cache", "lock poisoned by a panic")
}

/// Applies the `// #if NAME` / `// #else` / `// #endif` directives, `NAME`
/// being defined when it is in `defines`.
pub(crate) fn preprocess(parts: &[&str], defines: &[&str]) -> String {
    // No `enable subgroups;`: naga turns subgroup operations on through the
    // device feature and rejects the enable directive.
    let mut out = String::new();
    for part in parts {
        // None: outside a directive; Some(keep): inside one.
        let mut state: Option<bool> = None;
        for line in part.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix("// #if ") {
                state = Some(defines.contains(&name.trim()));
            } else if t == "// #else" {
                state = state.map(|k| !k);
            } else if t == "// #endif" {
                state = None;
            } else if state.unwrap_or(true) {
                out.push_str(line);
            }
            out.push('\n');
        }
    }
    out
}

/// `true` when `shader` carries the `// #unchecked` directive.
fn unchecked(shader: &Shader) -> bool {
    shader
        .parts
        .iter()
        .any(|p| p.lines().any(|l| l.trim() == "// #unchecked"))
}

impl WgpuBackend {
    fn module(&self, shader: &'static Shader) -> Result<wgpu::ShaderModule> {
        if let Some(m) = self
            .cache
            .modules
            .read()
            .map_err(|_| poisoned())?
            .get(shader.name)
        {
            return m
                .clone()
                .map_err(|e| failure(format!("shaders/{}.wgsl", shader.name), e));
        }
        let mut w = self.cache.modules.write().map_err(|_| poisoned())?;
        if let Some(m) = w.get(shader.name) {
            return m
                .clone()
                .map_err(|e| failure(format!("shaders/{}.wgsl", shader.name), e));
        }
        let r = self.build_module(shader, &self.ctx.defines());
        w.insert(
            shader.name,
            r.as_ref().map(Clone::clone).map_err(|e| e.to_string()),
        );
        r
    }

    /// Compiles `shader` with the preprocessor names `defines`.
    pub(crate) fn build_module(
        &self,
        shader: &'static Shader,
        defines: &[&str],
    ) -> Result<wgpu::ShaderModule> {
        let text = preprocess(shader.parts, defines);
        let scope = CallScope::open(&self.ctx.device);
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(shader.name),
            source: wgpu::ShaderSource::Wgsl(Cow::Owned(text)),
        };
        let module = if unchecked(shader) {
            // SAFETY: wgpu still validates the WGSL; what it no longer adds
            // are run-time bounds clamps and loop counters. A shader marked
            // `// #unchecked` indexes only in range and has only bounded
            // loops (see the module docs; the shader file argues it), and
            // the device keeps the driver's robust buffer access.
            unsafe {
                self.ctx
                    .device
                    .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            }
        } else {
            self.ctx.device.create_shader_module(desc)
        };
        let op = format!("compiling shaders/{}.wgsl", shader.name);
        scope.close(&op).map(|()| module)
    }

    /// The pipeline of `k`, built on first use and cached for this device.
    pub(crate) fn compiled(&self, k: &'static Kernel) -> Result<Arc<Compiled>> {
        let key = (k.shader.name, k.entry);
        let op = || format!("pipeline {}::{}", k.shader.name, k.entry);
        if let Some(c) = self
            .cache
            .pipelines
            .read()
            .map_err(|_| poisoned())?
            .get(&key)
        {
            return c.clone().map_err(|e| failure(op(), e));
        }
        let module = self.module(k.shader)?;
        let mut w = self.cache.pipelines.write().map_err(|_| poisoned())?;
        if let Some(c) = w.get(&key) {
            return c.clone().map_err(|e| failure(op(), e));
        }
        let dev = &self.ctx.device;
        let scope = CallScope::open(dev);
        let entries: Vec<wgpu::BindGroupLayoutEntry> = k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match b {
                        Bind::Read => wgpu::BufferBindingType::Storage { read_only: true },
                        Bind::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                        Bind::Uniform => wgpu::BufferBindingType::Uniform,
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(k.entry),
            entries: &entries,
        });
        let pl = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(k.entry),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(k.entry),
            layout: Some(&pl),
            module: &module,
            entry_point: Some(k.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                zero_initialize_workgroup_memory: !unchecked(k.shader),
                ..Default::default()
            },
            cache: None,
        });
        let r = scope
            .close(&op())
            .map(|()| Arc::new(Compiled { pipeline, layout }));
        w.insert(key, r.as_ref().map(Arc::clone).map_err(|e| e.to_string()));
        r
    }

    /// Builds the pipelines of `kernels` now, so that no timed call compiles.
    pub fn prepare(&self, kernels: &[&'static Kernel]) -> Result<()> {
        for k in kernels {
            self.compiled(k)?;
        }
        Ok(())
    }

    /// Starts recording work; [`Encoder::submit`] queues it.
    pub(crate) fn encoder(&self, label: &'static str) -> Encoder<'_> {
        Encoder {
            be: self,
            label,
            enc: self
                .ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) }),
        }
    }

    /// Workgroup counts for `groups` workgroups in a line, spread over x and y
    /// when x alone would exceed `max_compute_workgroups_per_dimension`.
    /// Shaders recover the linear index as `wid.x + wid.y * nwg.x`
    /// (`@builtin(num_workgroups) nwg`) and return when it is past the end.
    pub fn grid(&self, groups: u64) -> Result<[u32; 3]> {
        let max = self.ctx.limits.max_compute_workgroups_per_dimension.max(1) as u64;
        if groups <= max {
            return Ok([groups as u32, 1, 1]);
        }
        let y = groups.div_ceil(max);
        if y > max {
            return Err(Error::TooLarge {
                field: "workgroups (max_compute_workgroups_per_dimension squared)",
                value: groups as u128,
                limit: (max * max) as u128,
            });
        }
        Ok([groups.div_ceil(y) as u32, y as u32, 1])
    }
}

/// One binding of a dispatch: a whole buffer or a byte range of one.
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    buffer: &'a wgpu::Buffer,
    offset: u64,
    size: Option<u64>,
}

impl<'a> Arg<'a> {
    /// The whole buffer (its elements: a pooled wgpu buffer may be larger).
    pub fn buf<T: Element>(b: &'a WgpuBuffer<T>) -> Self {
        Self {
            buffer: b.raw(),
            offset: 0,
            size: Some(b.binding_bytes()),
        }
    }
    /// A raw wgpu buffer (uniforms made by [`WgpuBackend::uniform`]).
    pub fn raw(b: &'a wgpu::Buffer) -> Self {
        Self {
            buffer: b,
            offset: 0,
            size: None,
        }
    }
    /// Elements `start..start+len` of a buffer; `start * size_of::<T>()` must
    /// be a multiple of the adapter's `min_storage_buffer_offset_alignment`
    /// (256 bytes on most GPUs), which [`Encoder::dispatch`] checks.
    pub fn range<T: Element>(b: &'a WgpuBuffer<T>, start: usize, len: usize) -> Self {
        let sz = std::mem::size_of::<T>() as u64;
        Self {
            buffer: b.raw(),
            offset: start as u64 * sz,
            size: Some((len as u64 * sz).max(4).next_multiple_of(4)),
        }
    }
    fn bytes(&self) -> u64 {
        self.size.unwrap_or(self.buffer.size() - self.offset)
    }
}

/// Recorded work not yet submitted.
pub struct Encoder<'b> {
    be: &'b WgpuBackend,
    label: &'static str,
    enc: wgpu::CommandEncoder,
}

impl Encoder<'_> {
    /// Records one dispatch of `k` over `groups` workgroups with `args` bound
    /// to its bindings in order.
    ///
    /// Checks, before wgpu sees it: the number of arguments, every storage
    /// binding against `max_storage_buffer_binding_size` and every offset
    /// against `min_storage_buffer_offset_alignment` (an error naming the
    /// limit, where wgpu would raise a validation error), and the workgroup
    /// counts against `max_compute_workgroups_per_dimension`.
    pub fn dispatch(
        &mut self,
        k: &'static Kernel,
        args: &[Arg<'_>],
        groups: [u32; 3],
    ) -> Result<()> {
        self.check_args(k, args)?;
        let lim = &self.be.ctx.limits;
        let max = lim.max_compute_workgroups_per_dimension;
        if groups.iter().any(|&g| g > max) {
            return Err(Error::TooLarge {
                field: "workgroups per dimension (adapter limit max_compute_workgroups_per_dimension)",
                value: groups.iter().copied().max().unwrap_or(0) as u128,
                limit: max as u128,
            });
        }
        if groups.contains(&0) {
            return Ok(());
        }
        self.record(k, args, |pass| {
            pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        })
    }

    /// The argument count, and every binding against the adapter's size
    /// and alignment limits.
    fn check_args(&self, k: &'static Kernel, args: &[Arg<'_>]) -> Result<()> {
        if args.len() != k.bindings.len() {
            return Err(failure(
                format!("dispatch {}", k.entry),
                format!("{} arguments for {} bindings", args.len(), k.bindings.len()),
            ));
        }
        let lim = &self.be.ctx.limits;
        for (a, b) in args.iter().zip(k.bindings) {
            let (max, align) = match b {
                Bind::Uniform => (
                    lim.max_uniform_buffer_binding_size,
                    lim.min_uniform_buffer_offset_alignment as u64,
                ),
                _ => (
                    lim.max_storage_buffer_binding_size,
                    lim.min_storage_buffer_offset_alignment as u64,
                ),
            };
            if a.bytes() > max {
                return Err(Error::TooLarge {
                    field: if *b == Bind::Uniform {
                        "uniform binding bytes (adapter limit max_uniform_buffer_binding_size)"
                    } else {
                        "storage binding bytes (adapter limit max_storage_buffer_binding_size)"
                    },
                    value: a.bytes() as u128,
                    limit: max as u128,
                });
            }
            if !a.offset.is_multiple_of(align.max(1)) {
                return Err(failure(
                    format!("dispatch {}", k.entry),
                    format!("binding offset {} is not a multiple of {align}", a.offset),
                ));
            }
        }
        Ok(())
    }

    /// Records one dispatch of `k` whose workgroup counts (x, y, z: three
    /// u32) a kernel wrote at element `at` of `sizes`, so the host need not
    /// wait for them. The writer keeps each count within
    /// `max_compute_workgroups_per_dimension` (wgpu's indirect validation
    /// turns a larger one into an empty dispatch); the same argument checks
    /// as [`Encoder::dispatch`].
    pub fn dispatch_indirect(
        &mut self,
        k: &'static Kernel,
        args: &[Arg<'_>],
        sizes: &WgpuBuffer<u32>,
        at: usize,
    ) -> Result<()> {
        if at + 3 > sizes.len() {
            return Err(Error::dim(
                "dispatch_indirect",
                format!("3 counts at {at} of a buffer of {}", sizes.len()),
            ));
        }
        self.check_args(k, args)?;
        self.record(k, args, |pass| {
            pass.dispatch_workgroups_indirect(sizes.raw(), at as u64 * 4);
        })
    }

    /// Binds `args` and records one compute pass of `k` (with the kernel
    /// profile's timestamps while it is on) in which `go` dispatches.
    fn record(
        &mut self,
        k: &'static Kernel,
        args: &[Arg<'_>],
        go: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<()> {
        let c = self.be.compiled(k)?;
        let entries: Vec<wgpu::BindGroupEntry> = args
            .iter()
            .enumerate()
            .map(|(i, a)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: a.buffer,
                    offset: a.offset,
                    size: a.size.and_then(wgpu::BufferSize::new),
                }),
            })
            .collect();
        let bg = self
            .be
            .ctx
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(k.entry),
                layout: &c.layout,
                entries: &entries,
            });
        let enc = &mut self.enc;
        self.be.profile_stamps(k.entry, |timestamp_writes| {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(k.entry),
                timestamp_writes,
            });
            pass.set_pipeline(&c.pipeline);
            pass.set_bind_group(0, &bg, &[]);
            go(&mut pass);
        })
    }

    /// Records a copy of `len` elements from `src[src_at..]` to `dst[dst_at..]`
    /// (byte offsets and size must be multiples of 4).
    pub fn copy<T: Element>(
        &mut self,
        src: &WgpuBuffer<T>,
        src_at: usize,
        dst: &WgpuBuffer<T>,
        dst_at: usize,
        len: usize,
    ) -> Result<()> {
        if src_at + len > src.len() || dst_at + len > dst.len() {
            return Err(Error::dim(
                "copy",
                format!(
                    "{len} elements from {src_at} of {} to {dst_at} of {}",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        let sz = std::mem::size_of::<T>() as u64;
        let (s, d, n) = (src_at as u64 * sz, dst_at as u64 * sz, len as u64 * sz);
        if !(s.is_multiple_of(4) && d.is_multiple_of(4) && n.is_multiple_of(4)) {
            return Err(failure(
                self.label,
                "copy offsets and size must be multiples of 4 bytes",
            ));
        }
        if n > 0 {
            self.enc
                .copy_buffer_to_buffer(src.raw(), s, dst.raw(), d, n);
        }
        Ok(())
    }

    /// Records a zero fill of a whole buffer.
    pub fn zero<T: Element>(&mut self, buf: &WgpuBuffer<T>) {
        self.enc
            .clear_buffer(buf.raw(), 0, Some(buf.binding_bytes()));
    }

    /// Queues the recorded work (does not wait; [`WgpuBackend::download_into`]
    /// and `synchronize` do).
    pub fn submit(self) -> wgpu::SubmissionIndex {
        self.be.ctx.queue.submit([self.enc.finish()])
    }
}

#[cfg(test)]
mod tests {
    use super::preprocess;

    #[test]
    fn preprocess_keeps_the_branch_of_each_name() {
        let src = "a\n// #if X\nx\n// #else\nnot x\n// #endif\n// #if Y\ny\n// #endif\nb";
        let kept = |d: &[&str]| {
            preprocess(&[src], d)
                .lines()
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(kept(&[]), "a,not x,b");
        assert_eq!(kept(&["X"]), "a,x,b");
        assert_eq!(kept(&["Y", "X"]), "a,x,y,b");
    }
}
