#!/usr/bin/env python3
"""Apply the CUDA-13 / benchmark patches to a scratch copy of the peer sources.

usage: patch_sources.py SRC_COPY_DIR [--speck-dyn-smem N] [--speck-double]

SRC_COPY_DIR is a *copy* of benches/spgemm_peers/src (build.sh makes it); the
staged upstream files themselves are never modified.  Every patch is an exact
string replacement with an expected match count, so a patch that no longer
applies fails loudly instead of silently doing nothing.  Produces:
  SRC_COPY_DIR/opsparse/OpSparse        -> f32 build (mdouble = float)
  SRC_COPY_DIR/opsparse_f64/OpSparse    -> upstream precision (double)
"""
import argparse
import os
import shutil
import sys

LOG = []


def patch(path, old, new, count=1):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    n = text.count(old)
    if count is not None and n != count:
        raise SystemExit(f"PATCH FAILED: {path}: expected {count} match(es) of {old!r}, found {n}")
    if n == 0:
        raise SystemExit(f"PATCH FAILED: {path}: no match of {old!r}")
    text = text.replace(old, new)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    LOG.append(f"{os.path.relpath(path)}: {n}x {old.strip()[:60]!r} -> {new.strip()[:60]!r}")


def prepend(path, line):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(line + "\n" + text)
    LOG.append(f"{os.path.relpath(path)}: prepend {line!r}")


def patch_opsparse(root, f32):
    inc = os.path.join(root, "inc")
    src = os.path.join(root, "src")
    # 1. Host timer: upstream divides rdtsc by the TSC frequency from CPUID
    #    leaf 0x16, which is 0 on AMD EPYC and most VMs (-> inf/NaN phase
    #    times).  Use std::chrono instead (seconds, as upstream).
    patch(os.path.join(inc, "cuda_common.h"),
          "inline double fast_clock_time(){\n    long counter;\n    HP_TIMING_NOW(counter);\n"
          "    return double(counter)/get_tsc_freq();\n}",
          "inline double fast_clock_time(){\n    return std::chrono::duration<double>("
          "std::chrono::steady_clock::now().time_since_epoch()).count();\n}")
    patch(os.path.join(inc, "cuda_common.h"), "#include <algorithm>\n", "#include <algorithm>\n#include <chrono>\n#include <cassert>\n")
    # 2. Value type.  Upstream is double-only (typedef double mdouble).
    if f32:
        patch(os.path.join(inc, "cuda_common.h"), "typedef double mdouble;", "typedef float mdouble;")
    # 3. Places that hard-code double instead of mdouble (needed for f32).
    patch(os.path.join(src, "CSR.cu"), "val = new double [nnz];", "val = new mdouble [nnz];", count=2)
    cs = os.path.join(inc, "cusparse_spgemm.h")
    patch(cs, "double *d_csr_values_A", "mdouble *d_csr_values_A")
    patch(cs, "double *d_csr_values_B", "mdouble *d_csr_values_B")
    patch(cs, "double **d_csr_values_C", "mdouble **d_csr_values_C")
    patch(cs, "double               alpha", "mdouble              alpha")
    patch(cs, "double               beta", "mdouble              beta")
    patch(cs, "sizeof(double)", "sizeof(mdouble)")
    patch(cs, "CUDA_R_64F", "(sizeof(mdouble) == 4 ? CUDA_R_32F : CUDA_R_64F)", count=4)


def patch_speck(root, dyn_smem, keep_double):
    inc = os.path.join(root, "include")
    # 1. Shared-memory budget is a compile-time constant; upstream ships
    #    49152 and asks users to set the device's opt-in maximum
    #    (cudaDevAttrMaxSharedMemoryPerBlockOptin: 232448 on H100/H200).
    patch(os.path.join(inc, "Multiply.h"), "spECK_DYNAMIC_MEM_PER_BLOCK{49152}",
          "spECK_DYNAMIC_MEM_PER_BLOCK{%d}" % dyn_smem)
    # 2. CCCL 3 (CUDA 13) removed cub::Max / cub::Min functors.
    hf = os.path.join(inc, "GPU", "HelperFunctions.cuh")
    patch(hf, "cub::Min()", "cuda::minimum<>()", count=2)
    patch(hf, "cub::Max()", "cuda::maximum<>()", count=2)
    prepend(hf, "#include <cuda/functional>")
    #    CCCL 3 also removed cub/iterator/transform_input_iterator.cuh; spECK
    #    includes it but never uses cub::TransformInputIterator.
    patch(hf, "#include <cub/iterator/transform_input_iterator.cuh>", "// (removed in CCCL 3, unused) #include <cub/iterator/transform_input_iterator.cuh>")
    cc = os.path.join(inc, "common.cuh")
    patch(cc, "cub::Max()", "cuda::maximum<>()", count=1)
    # 3. Non-_sync warp shuffle does not exist for sm_70+ (template, only
    #    fails if instantiated; patched defensively).
    patch(cc, "__shfl(data[j*VecSize + i], shfl_offset)", "__shfl_sync(0xFFFFFFFFu, data[j*VecSize + i], shfl_offset)")
    prepend(cc, "#include <cuda/functional>")
    # 4. limits.cuh includes <npp.h> only for the NPP_MIN_*/NPP_MAX_* integer
    #    constants; NPP headers are an optional toolkit component, so define
    #    the same values locally (values as in nppdefs.h).
    npp_defs = "\n".join(
        "#ifndef %s\n#define %s %s\n#endif" % (k, k, v) for k, v in [
            ("NPP_MIN_8U", "(0)"), ("NPP_MAX_8U", "(255)"), ("NPP_MIN_8S", "(-127 - 1)"), ("NPP_MAX_8S", "(127)"),
            ("NPP_MIN_16U", "(0)"), ("NPP_MAX_16U", "(65535)"), ("NPP_MIN_16S", "(-32767 - 1)"),
            ("NPP_MAX_16S", "(32767)"), ("NPP_MIN_32U", "(0)"), ("NPP_MAX_32U", "(4294967295U)"),
            ("NPP_MIN_32S", "(-2147483647 - 1)"), ("NPP_MAX_32S", "(2147483647)")])
    patch(os.path.join(inc, "GPU", "limits.cuh"), "#include <npp.h>", npp_defs)
    # 5. Compile time: only the f32 instantiation is needed by the driver.
    if not keep_double:
        patch(os.path.join(root, "source", "GPU", "Multiply.cu"),
              "template void MultiplyspECK<double, 4, 1024,", "// (peer build: f32 only) template void MultiplyspECK<double, 4, 1024,")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--speck-dyn-smem", type=int, default=232448)
    ap.add_argument("--speck-double", action="store_true")
    a = ap.parse_args()
    src = os.path.abspath(a.src)
    ops = os.path.join(src, "opsparse", "OpSparse")
    ops64_parent = os.path.join(src, "opsparse_f64")
    if os.path.exists(ops64_parent):
        shutil.rmtree(ops64_parent)
    shutil.copytree(os.path.join(src, "opsparse"), ops64_parent)
    patch_opsparse(ops, f32=True)
    patch_opsparse(os.path.join(ops64_parent, "OpSparse"), f32=False)
    patch_speck(os.path.join(src, "speck"), a.speck_dyn_smem, a.speck_double)
    # nsparse: no source patch; the driver supplies helper_cuda.h and orders
    # includes so nsparse's `warp` macro cannot reach CCCL headers.
    print("\n".join(LOG))
    print(f"patch_sources: {len(LOG)} edits applied")


if __name__ == "__main__":
    main()
