// The kernel CudaBackend::new compiles and loads before it answers (see
// crates/trident-cuda/src/requirements.rs). It is never launched: loading it
// proves that NVRTC can target the device and that the driver accepts NVRTC's
// cubins, two failures that would otherwise surface only at a call's first
// kernel, after the facade had already chosen this backend.

extern "C" __global__ void trident_probe(unsigned int* out) {
    if (out != nullptr) *out = 1u;
}
