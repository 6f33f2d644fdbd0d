#!/usr/bin/env bash
# build.sh OUTDIR -- build the peer SpGEMM benchmark binaries with plain nvcc.
#
# Copies ./src and ./drivers to a scratch dir ($PEERS_BUILD, default
# /tmp/peers-build), applies patch_sources.py there (the staged sources are
# never modified), compiles every code in parallel and links
#   $PEERS_BUILD/bin/bench_{opsparse,opsparse_f64,nsparse,speck,cusparse}
# A code that fails to build does not stop the others; its compiler output is
# in OUTDIR/build-logs/<code>*.log.  OUTDIR/built.txt lists what was built.
#
# Incremental: objects already built for the same inputs are reused, so if a
# call is cut short (e.g. a 10-minute command limit) just run it again.
#
# Environment knobs:
#   NVCC=path            default /usr/local/cuda-13.0/bin/nvcc, then /usr/local/cuda/bin/nvcc, then PATH
#   PEERS_ARCH=sm_90     GPU architecture
#   PEERS_CODES="..."    subset of: opsparse opsparse_f64 nsparse speck cusparse
#   SPECK_DYN_SMEM=N     spECK's compile-time dynamic shared memory budget
#                        (default 232448 = H100/H200 opt-in max; 98304 = V100 value)
#   PEERS_BUILD=dir      scratch build dir (default /tmp/peers-build)
#   PEERS_CLEAN=1        wipe the scratch dir first
#   PEERS_NVCCFLAGS=".." extra nvcc flags for every compile and link
#   PEERS_LDFLAGS=".."   extra flags for the link steps only
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:?usage: build.sh OUTDIR}"
mkdir -p "$OUT/build-logs"
OUT="$(cd "$OUT" && pwd)"
LOGS="$OUT/build-logs"
BUILD="${PEERS_BUILD:-/tmp/peers-build}"
ARCH="${PEERS_ARCH:-sm_90}"
SPECK_DYN_SMEM="${SPECK_DYN_SMEM:-232448}"
CODES="${PEERS_CODES:-opsparse opsparse_f64 nsparse speck cusparse}"

say() { echo "[build $(date +%H:%M:%S)] $*" | tee -a "$LOGS/build.log"; }

# ---------------------------------------------------------------- toolchain
if [ -z "${NVCC:-}" ]; then
    for c in /usr/local/cuda-13.0/bin/nvcc /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
        if [ -n "$c" ] && [ -x "$c" ]; then NVCC="$c"; break; fi
    done
fi
if [ -z "${NVCC:-}" ] || [ ! -x "$NVCC" ]; then
    say "ERROR: nvcc not found (set NVCC=...)"
    for c in $CODES; do echo "$c FAIL nvcc-not-found"; done > "$OUT/built.txt"
    exit 1
fi
CUDA_HOME="$(cd "$(dirname "$NVCC")/.." && pwd)"
{
    echo "nvcc: $NVCC"; "$NVCC" --version
    echo "g++: $(g++ --version | head -1)"; echo "python3: $(python3 --version 2>&1)"
    echo "nproc: $(nproc)"; nvidia-smi -L 2>/dev/null || echo "nvidia-smi: n/a"
    echo "ARCH=$ARCH SPECK_DYN_SMEM=$SPECK_DYN_SMEM CODES=$CODES BUILD=$BUILD"
} > "$LOGS/env.txt" 2>&1
say "nvcc=$NVCC arch=$ARCH build=$BUILD codes: $CODES"

# ------------------------------------------------- scratch copy + patches
stamp="$( (cd "$HERE" && find src drivers patch_sources.py build.sh -type f -print0 | sort -z | xargs -0 sha1sum
           echo "$ARCH $SPECK_DYN_SMEM $NVCC") | sha1sum | cut -c1-16)"
if [ "${PEERS_CLEAN:-0}" = 1 ] || [ "$(cat "$BUILD/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$BUILD"
fi
if [ ! -f "$BUILD/.stamp" ]; then
    mkdir -p "$BUILD"
    cp -r "$HERE/src" "$BUILD/src"
    cp -r "$HERE/drivers" "$BUILD/drivers"
    if ! python3 "$HERE/patch_sources.py" "$BUILD/src" --speck-dyn-smem "$SPECK_DYN_SMEM" > "$LOGS/patch.log" 2>&1; then
        say "ERROR: patching failed, see $LOGS/patch.log"; cat "$LOGS/patch.log"
        for c in $CODES; do echo "$c FAIL patch"; done > "$OUT/built.txt"
        exit 1
    fi
    # cuda_profiler_api.h (included, unused, by OpSparse) ships with cudart;
    # provide an empty stand-in only if this toolkit lacks it.
    mkdir -p "$BUILD/stub"
    [ -f "$CUDA_HOME/include/cuda_profiler_api.h" ] || echo "#pragma once" > "$BUILD/stub/cuda_profiler_api.h"
    echo "$stamp" > "$BUILD/.stamp"
    say "sources copied and patched ($(tail -1 "$LOGS/patch.log"))"
else
    say "reusing $BUILD (same inputs); already built objects are kept"
fi
mkdir -p "$BUILD/obj" "$BUILD/bin"
S="$BUILD/src"; D="$BUILD/drivers"
BASE=(-std=c++17 -O3 -arch="$ARCH" -I"$BUILD/stub" -Xcompiler -fopenmp ${PEERS_NVCCFLAGS:-})
# rpath to the toolkit's libraries (libcusparse is linked dynamically; cudart is static)
EXTRA_LD=(-Xlinker -rpath -Xlinker "$CUDA_HOME/lib64" -Xlinker -rpath -Xlinker "$CUDA_HOME/targets/x86_64-linux/lib" ${PEERS_LDFLAGS:-})

# compile LOGNAME OUT.o nvcc-args...   (skips if OUT.o exists; atomic)
compile() {
    local name="$1" out="$2"; shift 2
    [ -s "$out" ] && return 0
    mkdir -p "$(dirname "$out")"
    local t0=$SECONDS part="${out%.o}.part.o"
    if "$NVCC" "$@" -o "$part" > "$LOGS/$name.log" 2>&1; then
        mv -f "$part" "$out"; echo "  $name: $((SECONDS - t0))s" >> "$LOGS/times.txt"; return 0
    fi
    rm -f "$part"; say "  FAILED compile $name (see build-logs/$name.log)"; return 1
}
# link CODE OUTBIN nvcc-args...
link() {
    local code="$1" bin="$2"; shift 2
    if "$NVCC" "$@" ${EXTRA_LD[@]+"${EXTRA_LD[@]}"} -o "$bin" > "$LOGS/$code-link.log" 2>&1; then return 0; fi
    say "  FAILED link $code (see build-logs/$code-link.log)"; return 1
}
finish() {  # CODE rc
    if [ "$2" = 0 ] && [ -x "$BUILD/bin/bench_$1" ]; then echo OK > "$LOGS/$1.status"; say "built $1 -> $BUILD/bin/bench_$1"
    else echo FAIL > "$LOGS/$1.status"; say "FAILED $1"; fi
}

build_opsparse_variant() {  # CODE DIR
    local code="$1" R="$2" O="$BUILD/obj/$1" rc=0
    local INC=(-I"$R/inc" -I"$R/src" -I"$D")
    compile "$code-Meta" "$O/Meta.o" "${BASE[@]}" "${INC[@]}" -c "$R/src/Meta.cu" & local p1=$!
    compile "$code-CSR" "$O/CSR.o" "${BASE[@]}" "${INC[@]}" -c "$R/src/CSR.cu" & local p2=$!
    compile "$code-Timings" "$O/Timings.o" "${BASE[@]}" "${INC[@]}" -c "$R/src/Timings.cu" & local p3=$!
    compile "$code-driver" "$O/bench.o" "${BASE[@]}" "${INC[@]}" -c "$D/bench_opsparse.cu" & local p4=$!
    for p in $p1 $p2 $p3 $p4; do wait $p || rc=1; done
    [ $rc = 0 ] && { link "$code" "$BUILD/bin/bench_$code" "${BASE[@]}" "$O/Meta.o" "$O/CSR.o" "$O/Timings.o" "$O/bench.o" -lcusparse || rc=1; }
    finish "$code" $rc
}
build_opsparse()     { build_opsparse_variant opsparse     "$S/opsparse/OpSparse"; }
build_opsparse_f64() { build_opsparse_variant opsparse_f64 "$S/opsparse_f64/OpSparse"; }

build_nsparse() {
    local O="$BUILD/obj/nsparse" rc=0
    compile nsparse-driver "$O/bench.o" "${BASE[@]}" -I"$D" -I"$S/nsparse/cuda-cpp/inc" -c "$D/bench_nsparse.cu" || rc=1
    [ $rc = 0 ] && { link nsparse "$BUILD/bin/bench_nsparse" "${BASE[@]}" "$O/bench.o" || rc=1; }
    finish nsparse $rc
}

build_speck() {
    local R="$S/speck" O="$BUILD/obj/speck" rc=0
    # flags of upstream CMakeLists.txt (minus -Wall/-keep/--ptxas-options=-v)
    local SF=(--expt-extended-lambda --expt-relaxed-constexpr -use_fast_math -D_FORCE_INLINES -I"$R/include" -I"$R/externals" -I"$D")
    compile speck-Multiply "$O/Multiply.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/GPU/Multiply.cu" & local p1=$!
    compile speck-memory "$O/memory.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/GPU/memory.cpp" & local p2=$!
    compile speck-dCSR "$O/dCSR.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/dCSR.cpp" & local p3=$!
    compile speck-driver "$O/bench.o" "${BASE[@]}" "${SF[@]}" -c "$D/bench_speck.cu" & local p4=$!
    # host-only parts of upstream's spECKLib (CSR.cpp is required: dCSR.cpp's
    # explicit instantiations reference CSR<T>::alloc; COO/Config for safety)
    compile speck-CSR "$O/CSR.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/CSR.cpp" & local p5=$!
    compile speck-COO "$O/COO.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/COO.cpp" & local p6=$!
    compile speck-Config "$O/Config.o" "${BASE[@]}" "${SF[@]}" -c "$R/source/Config.cpp" & local p7=$!
    for p in $p1 $p2 $p3 $p4 $p5 $p6 $p7; do wait $p || rc=1; done
    [ $rc = 0 ] && { link speck "$BUILD/bin/bench_speck" "${BASE[@]}" "$O/Multiply.o" "$O/memory.o" "$O/dCSR.o" \
                         "$O/CSR.o" "$O/COO.o" "$O/Config.o" "$O/bench.o" || rc=1; }
    finish speck $rc
}

build_cusparse() {
    local O="$BUILD/obj/cusparse" rc=0
    compile cusparse-driver "$O/bench.o" "${BASE[@]}" -I"$D" -c "$D/bench_cusparse.cu" || rc=1
    [ $rc = 0 ] && { link cusparse "$BUILD/bin/bench_cusparse" "${BASE[@]}" "$O/bench.o" -lcusparse || rc=1; }
    finish cusparse $rc
}

# ------------------------------------------------------------------ build
T0=$SECONDS
pids=()
for c in $CODES; do
    case "$c" in
        opsparse|opsparse_f64|nsparse|speck|cusparse) rm -f "$LOGS/$c.status"; "build_$c" & pids+=($!) ;;
        *) say "unknown code '$c' (ignored)" ;;
    esac
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p"; done

: > "$OUT/built.txt"
nok=0
for c in $CODES; do
    st="$(cat "$LOGS/$c.status" 2>/dev/null || echo FAIL)"
    if [ "$st" = OK ]; then echo "$c OK $BUILD/bin/bench_$c" >> "$OUT/built.txt"; nok=$((nok + 1))
    else echo "$c FAIL see build-logs/$c-*.log" >> "$OUT/built.txt"; fi
done
say "done in $((SECONDS - T0))s; per-object times in build-logs/times.txt"
cat "$OUT/built.txt"
# tail of each failing log, for a quick look in the command output
for c in $CODES; do
    if ! grep -q "^$c OK" "$OUT/built.txt"; then
        for f in "$LOGS/$c"-*.log; do [ -s "$f" ] && { echo "---- $f (tail)"; grep -m 20 -i "error" "$f" || tail -n 20 "$f"; }; done
    fi
done
[ "$nok" -gt 0 ]
