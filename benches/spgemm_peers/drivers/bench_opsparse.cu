// bench_opsparse.cu -- peer driver for OpSparse (lorentzbf/OpSparse, OpSparse/).
//
// The upstream benchmark main (src/reg_opsparse.cu) is compiled into this
// translation unit with its `main` renamed, so the timed function is exactly
// upstream's `opsparse(A, B, C, meta, timing)`: setup (C.rpt + metadata
// allocation, 8 stream creations), symbolic binning, symbolic, numeric
// binning, cudaMalloc of C.col/C.val, prefix sum, numeric, cleanup (metadata
// free, stream destruction).  Value type: `mdouble` from inc/cuda_common.h,
// patched to float by build.sh for the f32 binary (upstream: double).
#include "peer_common.h"

#define main opsparse_upstream_main
#include "reg_opsparse.cu"
#undef main

int main(int argc, char **argv) {
    peer::Args a = peer::parse_args(argc, argv, "opsparse");
    const char *prec = sizeof(mdouble) == 4 ? "f32" : "f64";
    try {
        peer::print_device();
        peer::HostCsr H = peer::load_square(a);
        int64_t products = peer::count_products(H);

        CSR A;
        A.M = (mint)H.rows;
        A.N = (mint)H.cols;
        A.nnz = (mint)H.nnz();
        A.rpt = new mint[(size_t)A.M + 1];
        A.col = new mint[(size_t)A.nnz];
        A.val = new mdouble[(size_t)A.nnz];
        std::copy(H.rpt.begin(), H.rpt.end(), A.rpt);
        std::copy(H.col.begin(), H.col.end(), A.col);
        for (size_t k = 0; k < H.val.size(); ++k) A.val[k] = (mdouble)H.val[k];
        A.H2D();
        cudaruntime_warmup();

        CSR C;
        Meta meta;
        Timings timing, acc;
        auto run = [&]() { opsparse(A, A, C, meta, timing); };
        auto after = [&](int) { acc += timing; };
        auto free_c = [&]() { C.release(); };
        std::vector<double> t = peer::time_calls(a, run, after, free_c);
        acc /= (double)a.reps;
        std::printf(
            "PEER_NATIVE opsparse own host timer (mean over timed reps, ms): total=%.4f setup=%.4f "
            "symbolic_binning=%.4f symbolic=%.4f numeric_binning+alloc+prefix(untimed in reg build)=%.4f "
            "numeric=%.4f cleanup=%.4f\n",
            1e3 * acc.total, 1e3 * acc.setup, 1e3 * acc.symbolic_binning, 1e3 * acc.symbolic,
            1e3 * (acc.total - acc.setup - acc.symbolic_binning - acc.symbolic - acc.numeric - acc.cleanup),
            1e3 * acc.numeric, 1e3 * acc.cleanup);

        std::vector<int> rpt((size_t)C.M + 1), col((size_t)C.nnz);
        std::vector<mdouble> val((size_t)C.nnz);
        peer::cuda_check(cudaMemcpy(rpt.data(), C.d_rpt, rpt.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.rpt");
        peer::cuda_check(cudaMemcpy(col.data(), C.d_col, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.col");
        peer::cuda_check(cudaMemcpy(val.data(), C.d_val, val.size() * sizeof(mdouble), cudaMemcpyDeviceToHost), "copy C.val");
        peer::Check chk = peer::check_c(H, (int64_t)C.M, rpt, col, val);
        peer::report("opsparse", prec, a, H, products, (int64_t)C.nnz, t, chk);
        C.release();
        A.release();
    } catch (std::exception &e) {
        peer::die(std::string("exception: ") + e.what());
    }
    return 0;
}
