// Shared by the cuDecomp FFI handlers (cudecomp_ffi.cc) and their Python
// bindings (cudecomp_bind.cc): result-code names and dtype mapping, so both
// report errors the same way ("<call> returned CUDECOMP_RESULT_<NAME> (<code>)").
#pragma once

#include <cudecomp.h>

#include <cstdint>
#include <string>

namespace darray {

inline const char* CudecompResultName(cudecompResult_t r) {
  switch (r) {
    case CUDECOMP_RESULT_SUCCESS: return "CUDECOMP_RESULT_SUCCESS";
    case CUDECOMP_RESULT_INVALID_USAGE: return "CUDECOMP_RESULT_INVALID_USAGE";
    case CUDECOMP_RESULT_NOT_SUPPORTED: return "CUDECOMP_RESULT_NOT_SUPPORTED";
    case CUDECOMP_RESULT_INTERNAL_ERROR: return "CUDECOMP_RESULT_INTERNAL_ERROR";
    case CUDECOMP_RESULT_CUDA_ERROR: return "CUDECOMP_RESULT_CUDA_ERROR";
    case CUDECOMP_RESULT_CUTENSOR_ERROR: return "CUDECOMP_RESULT_CUTENSOR_ERROR";
    case CUDECOMP_RESULT_MPI_ERROR: return "CUDECOMP_RESULT_MPI_ERROR";
    case CUDECOMP_RESULT_NCCL_ERROR: return "CUDECOMP_RESULT_NCCL_ERROR";
    case CUDECOMP_RESULT_NVSHMEM_ERROR: return "CUDECOMP_RESULT_NVSHMEM_ERROR";
    case CUDECOMP_RESULT_NVML_ERROR: return "CUDECOMP_RESULT_NVML_ERROR";
  }
  return "CUDECOMP_RESULT_UNKNOWN";
}

inline std::string CudecompFailure(const char* call, cudecompResult_t r) {
  return std::string(call) + " returned " + CudecompResultName(r) + " (" +
         std::to_string(static_cast<int>(r)) + ")";
}

// darray's transposes: the four pencil moves of cuDecomp, in its own order
// (the `op` attribute of the transpose handler and of Python's plan mapping).
enum TransposeOp : int32_t { kXToY = 0, kYToZ = 1, kZToY = 2, kYToX = 3 };

// The pencil axis (0 = X, 1 = Y, 2 = Z, cuDecomp's order) a transpose reads
// from and writes to.
inline int32_t InputPencil(int32_t op) {
  static const int32_t in[4] = {0, 1, 2, 1};
  return in[op];
}
inline int32_t OutputPencil(int32_t op) {
  static const int32_t out[4] = {1, 2, 1, 0};
  return out[op];
}

}  // namespace darray
