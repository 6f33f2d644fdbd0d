// helper_cuda.h -- minimal stand-in for the CUDA samples' helper_cuda.h,
// which nsparse includes but which CUDA toolkits no longer ship.
// Only checkCudaErrors / getLastCudaError are used by nsparse's headers.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifndef checkCudaErrors
#define checkCudaErrors(val) peer_check_cuda_((val), #val, __FILE__, __LINE__)
static inline void peer_check_cuda_(cudaError_t e, const char *what, const char *file, int line) {
    if (e != cudaSuccess) {
        std::printf("PEER_ERROR CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(e), cudaGetErrorString(e), file,
                    line, what);
        std::fflush(stdout);
        std::exit(2);
    }
}
#endif

#ifndef getLastCudaError
#define getLastCudaError(msg) peer_check_cuda_(cudaGetLastError(), (msg), __FILE__, __LINE__)
#endif
