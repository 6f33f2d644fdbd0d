// bench_nsparse.cu -- peer driver for nsparse (EBD-CREST/nsparse, cuda-cpp/).
//
// Timed call: upstream `SpGEMM_Hash(a, b, c)` from inc/HashSpGEMM_volta.hpp
// (the Volta+ variant that upstream's own sample spgemm_hash.cu uses; the
// pre-Volta HashSpGEMM.hpp relies on implicit warp synchronisation).  It
// covers BIN construction (temporaries + 7 stream creations), flop count and
// binning, symbolic phase, exclusive scan (thrust), cudaMalloc of C.col/C.val,
// numeric phase (with row sorting), and BIN destruction.  Upstream's sample
// times the same call with cudaEvents and averages 10 of 11 runs.
// Value type: VT below (float unless -DPEER_DOUBLE).
#include "peer_common.h"

// CCCL headers first: nsparse.hpp defines object-like macros (`warp`,
// `div_round_up`) that must not leak into thrust/cub.
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <cuda.h>

#include "helper_cuda.h"  // local stand-in for the CUDA samples header (checkCudaErrors)

#include <nsparse.hpp>
#include <CSR.hpp>
#include <HashSpGEMM_volta.hpp>

#ifdef PEER_DOUBLE
typedef double VT;
#else
typedef float VT;
#endif
typedef int IT;

int main(int argc, char **argv) {
    peer::Args a = peer::parse_args(argc, argv, "nsparse");
    const char *prec = sizeof(VT) == 4 ? "f32" : "f64";
    peer::print_device();
    peer::HostCsr H = peer::load_square(a);
    int64_t products = peer::count_products(H);

    CSR<IT, VT> A, C;
    A.nrow = (IT)H.rows;
    A.ncolumn = (IT)H.cols;
    A.nnz = (IT)H.nnz();
    A.rpt = new IT[(size_t)A.nrow + 1];
    A.colids = new IT[(size_t)A.nnz];
    A.values = new VT[(size_t)A.nnz];
    std::copy(H.rpt.begin(), H.rpt.end(), A.rpt);
    std::copy(H.col.begin(), H.col.end(), A.colids);
    for (size_t k = 0; k < H.val.size(); ++k) A.values[k] = (VT)H.val[k];
    A.memcpyHtD();
    peer::cuda_check(cudaDeviceSynchronize(), "upload A");

    auto run = [&]() { SpGEMM_Hash(A, A, C); };
    auto after = [&](int) {};
    auto free_c = [&]() { C.release_csr(); };
    std::vector<double> t = peer::time_calls(a, run, after, free_c);
    std::printf("PEER_NATIVE nsparse has no internal phase timer in SpGEMM_Hash; upstream sample = cudaEvent "
                "around the same call, mean of 10\n");

    std::vector<int> rpt((size_t)C.nrow + 1), col((size_t)C.nnz);
    std::vector<VT> val((size_t)C.nnz);
    peer::cuda_check(cudaMemcpy(rpt.data(), C.d_rpt, rpt.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.rpt");
    peer::cuda_check(cudaMemcpy(col.data(), C.d_colids, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.col");
    peer::cuda_check(cudaMemcpy(val.data(), C.d_values, val.size() * sizeof(VT), cudaMemcpyDeviceToHost), "copy C.val");
    peer::Check chk = peer::check_c(H, (int64_t)C.nrow, rpt, col, val);
    peer::report("nsparse", prec, a, H, products, (int64_t)C.nnz, t, chk);
    C.release_csr();
    A.release_csr();
    A.release_cpu_csr();
    return 0;
}
