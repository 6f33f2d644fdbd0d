#!/usr/bin/env bash
# The wgpu table of BENCHMARKS.md ("H100 GPU: the wgpu backend"): verify wgpu large (all five),
# wgpu_bench beside cuda_bench (cuBLAS, cuSPARSE) in one call, the cut against PyMaxflow, and the wgpu
# crate's tests on the H100 (one test thread).
# Binaries in $D (git-ignored): trident (features cuda,wgpu), wgpu_bench (trident-benches --features wgpu),
# cuda_bench (trident-benches --features cuda), wgpu_tests (the trident-wgpu lib test binary), whl/ with the
# PyMaxflow wheel; carry $D and .gl. Usage: bash benches/gpu/wgpu10.sh
D=${D:-.device-w}
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1 || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $D/whl/*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
echo "##### verify"; t0=$SECONDS; timeout 330 $D/trident verify --backend wgpu --size large 2>&1 | grep -v "^verify: [a-z_]* " | tail -20; echo "verify $((SECONDS-t0)) s"
echo "##### wgpu_bench"; timeout 200 $D/wgpu_bench --reps 10 gemm-4096 spgemm-poisson2d-2048 spgemm-rmat-16-8 spgemm-uniform-1M-8 pairs-1M-400K pairs-clustered omp-64x256-k16 2>&1 | tail -20
echo "##### cuda_bench"; timeout 150 $D/cuda_bench --reps 10 gemm-4096 spgemm pairs-1M-400K pairs-clustered 2>&1 | grep -A30 "^| case"
echo "##### wgpu_bench spgemm pass 2"; TRIDENT_WGPU_PROFILE=1 timeout 120 $D/wgpu_bench --reps 10 spgemm-poisson2d-2048 spgemm-rmat-16-8 spgemm-uniform-1M-8 2>&1 | grep -E "^\| spg|total|_team"
echo "##### cut"; timeout 150 $D/trident bench --backend wgpu --case cut-2048 --repeat 5 --py-peers benches/peers.py 2>&1 | tail -12
echo "##### wgpu tests"; timeout 150 $D/wgpu_tests --test-threads=1 2>&1 | grep -v XDG | tail -22
