#!/usr/bin/env bash
# One GPU-machine session: verify the CUDA backend, run its GPU tests, bench it
# against cuBLAS/cuSPARSE. Runs from the repository root on the device machine
# with the binaries from `cargo xtask device-build` carried in .device/.
# Usage: bash benches/gpu/run.sh [STEPS...]   (steps: info verify-small
# verify-large tests bench; default all). Logs go to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${*:-info verify-small verify-large tests bench}
status=0
step() { # name, command...
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$out/summary.txt"
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  tail -n 40 "$out/$name.log"
  [ $rc -eq 0 ] || status=1
}
for s in $steps; do
  case $s in
    info) step info nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv ;;
    verify-small) step verify-small .device/trident verify --backend cuda --size small ;;
    verify-large) step verify-large .device/trident verify --backend cuda --size large ;;
    tests) for t in .device/tests/*; do step "test-$(basename "$t")" env TRIDENT_REQUIRE_BACKENDS=cuda "$t"; done ;;
    bench) step bench .device/cuda_bench --reps 20 ;;
    *) echo "unknown step $s"; status=2 ;;
  esac
done
exit $status
