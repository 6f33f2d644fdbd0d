// bench_cusparse.cu -- reference driver: cuSPARSE generic SpGEMM (f32).
//
// Not one of the three research codes; a vendor baseline and a cross-check
// of nnz(C).  The handle and the descriptors of A are created once outside
// the timed region; the timed call covers C's descriptor, SpGEMM descriptor,
// workEstimation (x2), compute (x2), both external buffers, cudaMalloc of
// C.rpt/C.col/C.val, SpGEMM_copy and the release of descriptors and buffers.
// Algorithm: CUSPARSE_SPGEMM_DEFAULT, or the argument-4 number (1,2,3 ->
// ALG1, ALG2, ALG3; ALG2/3 need an extra call and use less memory).
#include "peer_common.h"

#include <cusparse.h>

#define CS(call)                                                                       \
    do {                                                                               \
        cusparseStatus_t s_ = (call);                                                  \
        if (s_ != CUSPARSE_STATUS_SUCCESS)                                             \
            peer::die(std::string("cuSPARSE ") + #call + ": " + cusparseGetErrorString(s_)); \
    } while (0)

int main(int argc, char **argv) {
    peer::Args a = peer::parse_args(argc, argv, "cusparse");
    int alg_no = argc > 4 ? std::atoi(argv[4]) : 0;
    cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_DEFAULT;
    if (alg_no == 1) alg = CUSPARSE_SPGEMM_ALG1;
    if (alg_no == 2) alg = CUSPARSE_SPGEMM_ALG2;
    if (alg_no == 3) alg = CUSPARSE_SPGEMM_ALG3;
    peer::print_device();
    peer::HostCsr H = peer::load_square(a);
    int64_t products = peer::count_products(H);
    int64_t n = H.rows, nnz = H.nnz();

    int *dA_rpt, *dA_col;
    float *dA_val;
    std::vector<float> hv(H.val.begin(), H.val.end());
    peer::cuda_check(cudaMalloc(&dA_rpt, (n + 1) * sizeof(int)), "malloc A");
    peer::cuda_check(cudaMalloc(&dA_col, std::max<int64_t>(nnz, 1) * sizeof(int)), "malloc A");
    peer::cuda_check(cudaMalloc(&dA_val, std::max<int64_t>(nnz, 1) * sizeof(float)), "malloc A");
    peer::cuda_check(cudaMemcpy(dA_rpt, H.rpt.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice), "upload A");
    peer::cuda_check(cudaMemcpy(dA_col, H.col.data(), nnz * sizeof(int), cudaMemcpyHostToDevice), "upload A");
    peer::cuda_check(cudaMemcpy(dA_val, hv.data(), nnz * sizeof(float), cudaMemcpyHostToDevice), "upload A");

    cusparseHandle_t handle;
    CS(cusparseCreate(&handle));
    cusparseSpMatDescr_t matA, matB;
    CS(cusparseCreateCsr(&matA, n, n, nnz, dA_rpt, dA_col, dA_val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CS(cusparseCreateCsr(&matB, n, n, nnz, dA_rpt, dA_col, dA_val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));

    int *dC_rpt = nullptr, *dC_col = nullptr;
    float *dC_val = nullptr;
    int64_t c_rows = 0, c_cols = 0, c_nnz = 0;
    auto run = [&]() {
        const float alpha = 1.0f, beta = 0.0f;
        const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
        cusparseSpMatDescr_t matC;
        cusparseSpGEMMDescr_t desc;
        void *buf1 = nullptr, *buf2 = nullptr, *buf3 = nullptr;
        size_t sz1 = 0, sz2 = 0, sz3 = 0;
        CS(cusparseCreateCsr(&matC, n, n, 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                             CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        CS(cusparseSpGEMM_createDescr(&desc));
        CS(cusparseSpGEMM_workEstimation(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc, &sz1, nullptr));
        peer::cuda_check(cudaMalloc(&buf1, std::max<size_t>(sz1, 1)), "malloc buf1");
        CS(cusparseSpGEMM_workEstimation(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc, &sz1, buf1));
        if (alg == CUSPARSE_SPGEMM_ALG2 || alg == CUSPARSE_SPGEMM_ALG3) {
            int64_t num_prods = 0;
            float chunk = 0.2f;
            CS(cusparseSpGEMM_getNumProducts(desc, &num_prods));
            CS(cusparseSpGEMM_estimateMemory(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc,
                                             chunk, &sz3, nullptr, nullptr));
            peer::cuda_check(cudaMalloc(&buf3, std::max<size_t>(sz3, 1)), "malloc buf3");
            CS(cusparseSpGEMM_estimateMemory(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc,
                                             chunk, &sz3, buf3, &sz2));
            peer::cuda_check(cudaFree(buf3), "free buf3");
            buf3 = nullptr;
        } else {
            CS(cusparseSpGEMM_compute(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc, &sz2, nullptr));
        }
        peer::cuda_check(cudaMalloc(&buf2, std::max<size_t>(sz2, 1)), "malloc buf2");
        CS(cusparseSpGEMM_compute(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc, &sz2, buf2));
        CS(cusparseSpMatGetSize(matC, &c_rows, &c_cols, &c_nnz));
        peer::cuda_check(cudaMalloc(&dC_rpt, (n + 1) * sizeof(int)), "malloc C.rpt");
        peer::cuda_check(cudaMalloc(&dC_col, std::max<int64_t>(c_nnz, 1) * sizeof(int)), "malloc C.col");
        peer::cuda_check(cudaMalloc(&dC_val, std::max<int64_t>(c_nnz, 1) * sizeof(float)), "malloc C.val");
        CS(cusparseCsrSetPointers(matC, dC_rpt, dC_col, dC_val));
        CS(cusparseSpGEMM_copy(handle, op, op, &alpha, matA, matB, &beta, matC, CUDA_R_32F, alg, desc));
        CS(cusparseSpGEMM_destroyDescr(desc));
        CS(cusparseDestroySpMat(matC));
        peer::cuda_check(cudaFree(buf1), "free buf1");
        peer::cuda_check(cudaFree(buf2), "free buf2");
    };
    auto after = [&](int) {};
    auto free_c = [&]() {
        cudaFree(dC_rpt); cudaFree(dC_col); cudaFree(dC_val);
        dC_rpt = dC_col = nullptr; dC_val = nullptr;
    };
    std::vector<double> t = peer::time_calls(a, run, after, free_c);
    std::printf("PEER_NATIVE cusparse generic SpGEMM alg=%d (0=DEFAULT)\n", alg_no);

    std::vector<int> rpt((size_t)n + 1), col((size_t)c_nnz);
    std::vector<float> val((size_t)c_nnz);
    peer::cuda_check(cudaMemcpy(rpt.data(), dC_rpt, rpt.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.rpt");
    peer::cuda_check(cudaMemcpy(col.data(), dC_col, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy C.col");
    peer::cuda_check(cudaMemcpy(val.data(), dC_val, val.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy C.val");
    peer::Check chk = peer::check_c(H, c_rows, rpt, col, val);
    peer::report("cusparse", "f32", a, H, products, c_nnz, t, chk);
    free_c();
    cusparseDestroySpMat(matA);
    cusparseDestroySpMat(matB);
    cusparseDestroy(handle);
    cudaFree(dA_rpt); cudaFree(dA_col); cudaFree(dA_val);
    return 0;
}
