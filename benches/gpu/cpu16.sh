#!/usr/bin/env bash
# The rayon backend on the GPU machine's 16 cores against the CPU peers, all in one
# device call. $D (default .device-rayon, git-ignored, carried) holds bench_table and trident
# (release, stripped, built on the CPU box), fma_peak for the ceiling step and whl/ with the peer wheels of benches/requirements.txt
# (Python 3.12; python-graphblas also needs cffi, pycparser, donfig; igraph needs texttable).
# Usage: bash benches/gpu/cpu16.sh [info] [ceiling] [inputs] [peers] [table] [trace] [sptrace] [omp] [verify] [rounds]
#   ceiling: fma_peak (also in $D) on 1, 8 and 16 threads: what a register-only multiply-add loop reaches,
#   the practical ceiling of a GEMM on the same threads.
#   rounds: three alternating rounds of gemm-4096, ours then numpy then the ceiling (needs inputs first).
#   CASES (comma list) limits the cases; PEERCASES likewise for peers.py.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"; D=${D:-.device-rayon}
steps=${*:-info inputs peers table}
CASES=${CASES:-gemm-4096,gemm-8192,gemm-4096-f64,spgemm-poisson2d-2048,spgemm-rmat-16-8,spgemm-uniform-1M-8,pairs-1M-400K,pairs-clustered,omp-64x256-k16,cut-512,cut-2048,flow-rmf}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $D/whl/*.whl \
  > "$out/pip.log" 2>&1 && export PYTHONPATH=/tmp/site
for s in $steps; do
  t0=$SECONDS
  echo "=== $s" | tee -a "$out/summary.txt"
  case $s in
    info)
      { cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; lscpu | grep -E "Model name|^CPU\(s\)|Thread|L2|L3|Flags" | cut -c1-200; nproc; free -g | head -2
        python3 -c "import numpy, scipy; print('numpy', numpy.__version__, 'scipy', scipy.__version__)"
        python3 -c "import graphblas, pykdtree, spams, maxflow, igraph; print('graphblas', graphblas.__version__, 'pykdtree ok, spams ok, maxflow', maxflow.__version__, 'igraph', igraph.__version__)"
      } 2>&1 | tee "$out/info.log" ;;
    ceiling) $D/fma_peak 1 8 16 2>&1 | tee "$out/ceiling.log" ;;
    inputs) $D/bench_table --write-inputs /tmp/data --case "$CASES" > "$out/inputs.log" 2>&1; tail -3 "$out/inputs.log" ;;
    peers)
      cs=(); for c in ${PEERCASES:-${CASES//,/ }}; do cs+=(--case "$c"); done
      sel() { local want=() c; for c in "${cs[@]}"; do [[ $c == --case ]] && continue; [[ $c == $1* ]] && want+=(--case "$c"); done; echo "${want[@]:-}"; }
      : > "$out/peers.tsv"
      a=$(sel spgemm); [ -n "$a" ] && python3 benches/peers.py /tmp/data --reps 2 --peer spgemm --peer graphblas $a >> "$out/peers.tsv" 2>> "$out/peers.log"
      a="$(sel pairs) $(sel gemm)"; [ -n "${a// /}" ] && python3 benches/peers.py /tmp/data --reps 2 $a >> "$out/peers.tsv" 2>> "$out/peers.log"
      a="$(sel omp) $(sel cut) $(sel flow)"; [ -n "${a// /}" ] && python3 benches/peers.py /tmp/data --reps 2 --peer spams --peer grid --peer network $a >> "$out/peers.tsv" 2>> "$out/peers.log"
      # SPAMS's bundled OpenBLAS does not know this CPU (Prescott kernels): time it with the core types forced too.
      a=$(sel omp); for ct in Haswell SkylakeX; do [ -n "$a" ] && OPENBLAS_CORETYPE=$ct python3 benches/peers.py /tmp/data --reps 2 --peer spams $a 2>> "$out/peers.log" | grep -v "^case" >> "$out/peers.tsv"; done
      grep -v "^case" "$out/peers.tsv" | cut -f1-3,5 ;;
    table) $D/bench_table --reps ${REPS:-5} --case "$CASES" --peers "$out/peers.tsv" > "$out/table.md" 2> "$out/table.log"; cat "$out/table.md" ;;
    trace) for t in 1 4 16; do echo "threads $t"; RAYON_NUM_THREADS=$t RUST_LOG=trident_rayon=debug $D/bench_table --reps 3 --case pairs-1M-400K,pairs-clustered --no-kiddo 2>&1 | grep -E "DEBUG|\| pairs"; done | tee "$out/trace.log" ;;
    sptrace) RUST_LOG=trident_rayon=debug $D/bench_table --reps 3 --case spgemm-poisson2d-2048,spgemm-uniform-1M-8 --no-kiddo 2>&1 | grep -E "DEBUG|\| spgemm" | tee "$out/sptrace.log" ;;
    omp) for t in 1 16; do RAYON_NUM_THREADS=$t $D/bench_table --reps 3 --case omp-64x256-k16 2>&1 | grep -E "\| omp"; done | tee "$out/omp.log" ;;
    rounds) for r in 1 2 3; do
        echo "round $r: ours $($D/bench_table --reps 5 --case gemm-4096 --no-kiddo 2>&1 | grep -E '^\| gemm' | cut -d'|' -f4,5,6 | tr '\n' ' ')"
        echo "round $r: numpy $(python3 benches/peers.py /tmp/data --reps 5 --case gemm-4096 2>/dev/null | grep gemm | cut -f2,3,6)"
        $D/fma_peak 16
      done 2>&1 | tee "$out/rounds.log" ;;
    verify) timeout 400 $D/trident verify --backend rayon --size large 2>&1 | grep -v "^verify: " | tee "$out/verify.log" ;;
    *) echo "unknown step $s" ;;
  esac
  echo "=== $s: $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
done
