#!/usr/bin/env bash
# One GPU-machine session: verify the CUDA and wgpu backends on every primitive,
# run the CUDA crate's GPU tests, and bench both against the vendor libraries
# and the CPU peers. Runs from the repository root on the device machine with
# the binaries from `cargo xtask device-build` carried in .device/ (and, for
# wgpu, the Vulkan loader debs in .gl/; for the Python peers, wheels in .whl/).
# Usage: bash benches/gpu/run.sh [STEPS...]
#   steps: info verify-small verify-large tests bench-cuda bench-omp bench-flow
#          bench-wgpu (default: all). Logs go to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
D=.device
steps=${*:-info verify-small verify-large tests bench-cuda bench-omp bench-flow bench-wgpu}
status=0

# Vulkan loader for wgpu (the machine has the NVIDIA ICD but no libvulkan).
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1 ||
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
# Python peers (SPAMS, PyMaxflow) from carried wheels.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi

step() { # name, command...
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$out/summary.txt"
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  tail -n 25 "$out/$name.log"
  [ $rc -eq 0 ] || status=1
}
verify_both() { # size
  local rc=0
  for b in cuda wgpu; do timeout 240 $D/trident verify --backend $b --size "$1" || rc=1; done
  return $rc
}
tests() {
  local rc=0
  for t in $D/tests/*; do
    echo "--- $t"; TRIDENT_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$t" 2>&1 | grep -E "test result|FAILED|panicked|SKIP" || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  done
  return $rc
}
omp() {
  timeout 200 $D/cuda_omp_bench --dump /tmp/omp || return 1
  timeout 150 python3 benches/gpu/omp_peers.py /tmp/omp 16
}
flow() {
  timeout 150 $D/flow_bench --reps 5 --cases cut-512,cut-2048,flow-rmf,cut3d-256 --dump /tmp/dump || return 1
  for c in 512 2048; do timeout 60 python3 benches/examples/cut_pymaxflow.py /tmp/dump/cut-$c 5; done
}
for s in $steps; do
  case $s in
    info) step info nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv ;;
    verify-small) step verify-small verify_both small ;;
    verify-large) step verify-large verify_both large ;;
    tests) step tests tests ;;
    bench-cuda) step bench-cuda timeout 200 $D/cuda_bench --reps 10 ;;
    bench-omp) step bench-omp omp ;;
    bench-flow) step bench-flow flow ;;
    bench-wgpu) step bench-wgpu timeout 200 $D/wgpu_bench --reps 5 ;;
    *) echo "unknown step $s"; status=2 ;;
  esac
done
exit $status
