// bench_speck.cu -- peer driver for spECK (GPUPeople/spECK, branch cuda11).
//
// Timed call: upstream `spECK::MultiplyspECK<float, 4, 1024, DYN, STATIC>(A,
// B, C, config, timings)` -- the same call upstream's Executor.cpp times --
// covering temporaries, row analysis, load balancing, symbolic (counting),
// allocation of C, numeric, sorting and cleanup.  `config` (device query, 6
// streams, 4 events) is created once outside the timed region, as upstream
// does.  Unlike upstream's Executor, C is released between calls (as the
// OpSparse authors' spECK harness does), so every timed call allocates C;
// upstream's Executor reuses C's buffers when nnz(C) is unchanged.
#include "peer_common.h"

#include "Multiply.h"
#include "Timings.h"
#include "dCSR.h"
#include "spECKConfig.h"

#ifdef PEER_DOUBLE
typedef double VT;
#else
typedef float VT;
#endif

int main(int argc, char **argv) {
    peer::Args a = peer::parse_args(argc, argv, "speck");
    const char *prec = sizeof(VT) == 4 ? "f32" : "f64";
    try {
        peer::print_device();
        peer::HostCsr H = peer::load_square(a);
        int64_t products = peer::count_products(H);
        std::printf("PEER_NATIVE speck compiled with spECK_STATIC_MEM_PER_BLOCK=%d spECK_DYNAMIC_MEM_PER_BLOCK=%d\n",
                    spECK_STATIC_MEM_PER_BLOCK, spECK_DYNAMIC_MEM_PER_BLOCK);

        dCSR<VT> A;
        A.alloc((size_t)H.rows, (size_t)H.cols, (size_t)H.nnz());
        {
            std::vector<VT> v(H.val.size());
            for (size_t k = 0; k < v.size(); ++k) v[k] = (VT)H.val[k];
            peer::cuda_check(cudaMemcpy(A.row_offsets, H.rpt.data(), H.rpt.size() * sizeof(unsigned), cudaMemcpyHostToDevice), "upload A.rpt");
            peer::cuda_check(cudaMemcpy(A.col_ids, H.col.data(), H.col.size() * sizeof(unsigned), cudaMemcpyHostToDevice), "upload A.col");
            peer::cuda_check(cudaMemcpy(A.data, v.data(), v.size() * sizeof(VT), cudaMemcpyHostToDevice), "upload A.val");
        }
        auto config = spECK::spECKConfig::initialize(0);
        peer::cuda_check(cudaDeviceSynchronize(), "spECK config");

        dCSR<VT> C;
        Timings timings, acc;
        auto run = [&]() {
            timings = Timings();
            timings.measureAll = false;
            timings.measureCompleteTime = true;
            spECK::MultiplyspECK<VT, 4, 1024, spECK_DYNAMIC_MEM_PER_BLOCK, spECK_STATIC_MEM_PER_BLOCK>(A, A, C, config, timings);
        };
        auto after = [&](int) { acc += timings; };
        auto free_c = [&]() { C.reset(); };
        std::vector<double> t = peer::time_calls(a, run, after, free_c);
        acc /= (float)a.reps;
        std::printf("PEER_NATIVE speck own cudaEvent timer 'complete' (mean over timed reps, ms): %.4f\n", acc.complete);

        std::vector<unsigned> rpt(C.rows + 1), col(C.nnz);
        std::vector<VT> val(C.nnz);
        if (C.nnz == 0 || C.row_offsets == nullptr) peer::die("spECK returned an empty C");
        peer::cuda_check(cudaMemcpy(rpt.data(), C.row_offsets, rpt.size() * sizeof(unsigned), cudaMemcpyDeviceToHost), "copy C.rpt");
        peer::cuda_check(cudaMemcpy(col.data(), C.col_ids, col.size() * sizeof(unsigned), cudaMemcpyDeviceToHost), "copy C.col");
        peer::cuda_check(cudaMemcpy(val.data(), C.data, val.size() * sizeof(VT), cudaMemcpyDeviceToHost), "copy C.val");
        peer::Check chk = peer::check_c(H, (int64_t)C.rows, rpt, col, val);
        peer::report("speck", prec, a, H, products, (int64_t)C.nnz, t, chk);
    } catch (std::exception &e) {
        peer::die(std::string("exception: ") + e.what());
    } catch (const char *s) {
        peer::die(std::string("exception: ") + s);
    }
    return 0;
}
