// A small stand-in for libcutensor.so.2, for the GPU TEST RIG ONLY.
//
// Why: the real cuTENSOR 2.x library is ~320 MB and cannot be carried to the
// GPU test machine (64 MiB per transfer).  cuDecomp uses cuTENSOR for exactly
// one thing: the local out-of-place tensor permutation inside its transposes.
// This file implements only the cuTENSOR 2.x entry points cuDecomp imports,
// compiled against the real cutensor.h (from the cutensor-cu13 wheel) so the
// types and calling conventions are the library's own; the exported symbols
// carry the same ELF version tags as the real library (cutensor_shim.map), so
// a libcudecomp.so linked against the real cuTENSOR loads this one unchanged.
//
// The permutation is a plain strided n-d copy kernel: correct, not fast.  Any
// timing taken with this shim measures this kernel, not cuTENSOR.
// Users build cuDecomp against the real cuTENSOR (tools/build_cudecomp.sh).
//
// Semantics implemented (cuTENSOR 2.x docs for cutensorPermute):
//   B[modeB] = alpha * opA(A[modeA]), out of place, on `stream`;
//   NULL strides mean packed generalized column-major (mode 0 fastest);
//   a mode of B absent from A is broadcast; a mode of A absent from B is an error
//   (that would be a reduction, which cutensorPermute does not do);
//   data types: R_32F, R_64F, C_32F, C_64F with typeA == typeB; alpha has the data type;
//   opA: IDENTITY, or CONJ (complex conjugate; identity on real data).
// Every failure is returned as a cutensorStatus_t; nothing aborts.

#include <cutensor.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <new>

namespace {

constexpr uint32_t kMaxModes = 12;   // cuDecomp uses 3; anything above this is NOT_SUPPORTED
constexpr uint32_t kHandleMagic = 0x5e7a50f1u;

}  // namespace

// The opaque structs of cutensor/types.h, given bodies here.
struct cutensorHandle {
  uint32_t magic;
  int device;
};

struct cutensorComputeDescriptor {
  int bits;   // 32 or 64: the precision the caller asked for
};

struct cutensorTensorDescriptor {
  uint32_t num_modes;
  int64_t extent[kMaxModes];
  int64_t stride[kMaxModes];
  cudaDataType_t type;
};

struct cutensorOperationDescriptor {
  cutensorTensorDescriptor a;
  cutensorTensorDescriptor b;
  int32_t mode_a[kMaxModes];
  int32_t mode_b[kMaxModes];
  cutensorOperator_t op_a;
};

struct cutensorPlanPreference {
  cutensorAlgo_t algo;
  cutensorJitMode_t jit;
};

// Everything the kernel needs, laid out in B's mode order (B mode 0 fastest).
struct PermuteGeometry {
  uint32_t num_modes;
  int64_t extent[kMaxModes];    // extent of B's mode i
  int64_t stride_a[kMaxModes];  // A's stride for B's mode i (0: broadcast)
  int64_t stride_b[kMaxModes];
  int64_t total;
};

struct cutensorPlan {
  PermuteGeometry geometry;
  cudaDataType_t type;
  bool conjugate;
};

static cutensorComputeDescriptor g_compute_32f{32};
static cutensorComputeDescriptor g_compute_64f{64};
extern "C" {
const cutensorComputeDescriptor_t CUTENSOR_COMPUTE_DESC_32F = &g_compute_32f;
const cutensorComputeDescriptor_t CUTENSOR_COMPUTE_DESC_64F = &g_compute_64f;
}

namespace {

bool supported_type(cudaDataType_t t) {
  return t == CUDA_R_32F || t == CUDA_R_64F || t == CUDA_C_32F || t == CUDA_C_64F;
}

bool valid_handle(const cutensorHandle* h) { return h != nullptr && h->magic == kHandleMagic; }

// Element types with the two operations the kernel needs.
struct ComplexF { float re, im; };
struct ComplexD { double re, im; };

__device__ __forceinline__ float scale(float alpha, float x, bool) { return alpha * x; }
__device__ __forceinline__ double scale(double alpha, double x, bool) { return alpha * x; }
template <typename C>
__device__ __forceinline__ C scale(C alpha, C x, bool conjugate) {
  if (conjugate) x.im = -x.im;
  C r;
  r.re = alpha.re * x.re - alpha.im * x.im;
  r.im = alpha.re * x.im + alpha.im * x.re;
  return r;
}

template <typename T>
__global__ void permute_kernel(PermuteGeometry g, T alpha, bool alpha_is_zero, bool conjugate,
                               const T* __restrict__ a, T* __restrict__ b) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < g.total;
       linear += step) {
    int64_t rest = linear, off_a = 0, off_b = 0;
    for (uint32_t i = 0; i < g.num_modes; ++i) {
      const int64_t idx = rest % g.extent[i];
      rest /= g.extent[i];
      off_a += idx * g.stride_a[i];
      off_b += idx * g.stride_b[i];
    }
    if (alpha_is_zero) {   // documented: A is not read when alpha == 0
      b[off_b] = T{};
    } else {
      b[off_b] = scale(alpha, a[off_a], conjugate);
    }
  }
}

template <typename T>
cutensorStatus_t launch(const cutensorPlan* plan, const void* alpha_host, const void* a, void* b,
                        cudaStream_t stream) {
  T alpha;
  std::memcpy(&alpha, alpha_host, sizeof(T));
  const T zero{};
  const bool alpha_is_zero = std::memcmp(&alpha, &zero, sizeof(T)) == 0;
  const int threads = 256;
  int64_t blocks = (plan->geometry.total + threads - 1) / threads;
  if (blocks > 65535LL * 32) blocks = 65535LL * 32;   // grid-stride loop covers the rest
  permute_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      plan->geometry, alpha, alpha_is_zero, plan->conjugate, static_cast<const T*>(a), static_cast<T*>(b));
  return cudaGetLastError() == cudaSuccess ? CUTENSOR_STATUS_SUCCESS : CUTENSOR_STATUS_CUDA_ERROR;
}

}  // namespace

extern "C" {

cutensorStatus_t cutensorCreate(cutensorHandle_t* handle) {
  if (handle == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return CUTENSOR_STATUS_CUDA_ERROR;
  auto* h = new (std::nothrow) cutensorHandle{kHandleMagic, device};
  if (h == nullptr) return CUTENSOR_STATUS_ALLOC_FAILED;
  *handle = h;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorDestroy(cutensorHandle_t handle) {
  if (!valid_handle(handle)) return CUTENSOR_STATUS_INVALID_VALUE;
  handle->magic = 0;
  delete handle;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorCreateTensorDescriptor(const cutensorHandle_t handle, cutensorTensorDescriptor_t* desc,
                                                const uint32_t numModes, const int64_t extent[],
                                                const int64_t stride[], cudaDataType_t dataType,
                                                uint32_t alignmentRequirement) {
  (void)alignmentRequirement;   // the copy kernel has no alignment assumptions
  if (!valid_handle(handle)) return CUTENSOR_STATUS_NOT_INITIALIZED;
  if (desc == nullptr || (numModes > 0 && extent == nullptr)) return CUTENSOR_STATUS_INVALID_VALUE;
  if (numModes > kMaxModes || !supported_type(dataType)) return CUTENSOR_STATUS_NOT_SUPPORTED;
  auto* d = new (std::nothrow) cutensorTensorDescriptor{};
  if (d == nullptr) return CUTENSOR_STATUS_ALLOC_FAILED;
  d->num_modes = numModes;
  d->type = dataType;
  int64_t packed = 1;
  for (uint32_t i = 0; i < numModes; ++i) {
    if (extent[i] <= 0 || (stride != nullptr && stride[i] <= 0)) {
      delete d;
      return CUTENSOR_STATUS_INVALID_VALUE;
    }
    d->extent[i] = extent[i];
    d->stride[i] = stride != nullptr ? stride[i] : packed;   // NULL: packed column-major
    packed *= extent[i];
  }
  *desc = d;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorDestroyTensorDescriptor(cutensorTensorDescriptor_t desc) {
  delete desc;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorCreatePermutation(const cutensorHandle_t handle, cutensorOperationDescriptor_t* desc,
                                           const cutensorTensorDescriptor_t descA, const int32_t modeA[],
                                           cutensorOperator_t opA, const cutensorTensorDescriptor_t descB,
                                           const int32_t modeB[], const cutensorComputeDescriptor_t descCompute) {
  if (!valid_handle(handle)) return CUTENSOR_STATUS_NOT_INITIALIZED;
  if (desc == nullptr || descA == nullptr || descB == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  if ((descA->num_modes > 0 && modeA == nullptr) || (descB->num_modes > 0 && modeB == nullptr))
    return CUTENSOR_STATUS_INVALID_VALUE;
  if (descA->type != descB->type) return CUTENSOR_STATUS_NOT_SUPPORTED;
  if (opA != CUTENSOR_OP_IDENTITY && opA != CUTENSOR_OP_CONJ) return CUTENSOR_STATUS_NOT_SUPPORTED;
  if (descCompute != CUTENSOR_COMPUTE_DESC_32F && descCompute != CUTENSOR_COMPUTE_DESC_64F)
    return CUTENSOR_STATUS_NOT_SUPPORTED;
  auto* op = new (std::nothrow) cutensorOperationDescriptor{};
  if (op == nullptr) return CUTENSOR_STATUS_ALLOC_FAILED;
  op->a = *descA;
  op->b = *descB;
  std::memcpy(op->mode_a, modeA, sizeof(int32_t) * descA->num_modes);
  std::memcpy(op->mode_b, modeB, sizeof(int32_t) * descB->num_modes);
  op->op_a = opA;
  *desc = op;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorDestroyOperationDescriptor(cutensorOperationDescriptor_t desc) {
  delete desc;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorCreatePlanPreference(const cutensorHandle_t handle, cutensorPlanPreference_t* pref,
                                              cutensorAlgo_t algo, cutensorJitMode_t jitMode) {
  if (!valid_handle(handle)) return CUTENSOR_STATUS_NOT_INITIALIZED;
  if (pref == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  auto* p = new (std::nothrow) cutensorPlanPreference{algo, jitMode};
  if (p == nullptr) return CUTENSOR_STATUS_ALLOC_FAILED;
  *pref = p;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorDestroyPlanPreference(cutensorPlanPreference_t pref) {
  delete pref;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorCreatePlan(const cutensorHandle_t handle, cutensorPlan_t* plan,
                                    const cutensorOperationDescriptor_t desc, const cutensorPlanPreference_t pref,
                                    uint64_t workspaceSizeLimit) {
  (void)pref;                 // one algorithm only
  (void)workspaceSizeLimit;   // needs no workspace
  if (!valid_handle(handle)) return CUTENSOR_STATUS_NOT_INITIALIZED;
  if (plan == nullptr || desc == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  const cutensorTensorDescriptor& a = desc->a;
  const cutensorTensorDescriptor& b = desc->b;
  // Mode labels must be unique within each tensor.
  for (uint32_t i = 0; i < a.num_modes; ++i)
    for (uint32_t j = i + 1; j < a.num_modes; ++j)
      if (desc->mode_a[i] == desc->mode_a[j]) return CUTENSOR_STATUS_INVALID_VALUE;
  for (uint32_t i = 0; i < b.num_modes; ++i)
    for (uint32_t j = i + 1; j < b.num_modes; ++j)
      if (desc->mode_b[i] == desc->mode_b[j]) return CUTENSOR_STATUS_INVALID_VALUE;
  PermuteGeometry g{};
  g.num_modes = b.num_modes;
  g.total = 1;
  for (uint32_t i = 0; i < b.num_modes; ++i) {
    g.extent[i] = b.extent[i];
    g.stride_b[i] = b.stride[i];
    g.stride_a[i] = 0;   // broadcast unless A has this mode
    for (uint32_t k = 0; k < a.num_modes; ++k) {
      if (desc->mode_a[k] == desc->mode_b[i]) {
        if (a.extent[k] != b.extent[i]) return CUTENSOR_STATUS_INVALID_VALUE;
        g.stride_a[i] = a.stride[k];
      }
    }
    g.total *= b.extent[i];
  }
  for (uint32_t k = 0; k < a.num_modes; ++k) {   // a mode only in A would be a reduction
    bool found = false;
    for (uint32_t i = 0; i < b.num_modes; ++i) found = found || desc->mode_a[k] == desc->mode_b[i];
    if (!found) return CUTENSOR_STATUS_INVALID_VALUE;
  }
  auto* p = new (std::nothrow) cutensorPlan{};
  if (p == nullptr) return CUTENSOR_STATUS_ALLOC_FAILED;
  p->geometry = g;
  p->type = b.type;
  p->conjugate = desc->op_a == CUTENSOR_OP_CONJ && (b.type == CUDA_C_32F || b.type == CUDA_C_64F);
  *plan = p;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorDestroyPlan(cutensorPlan_t plan) {
  delete plan;
  return CUTENSOR_STATUS_SUCCESS;
}

cutensorStatus_t cutensorPermute(const cutensorHandle_t handle, const cutensorPlan_t plan, const void* alpha,
                                 const void* A, void* B, const cudaStream_t stream) {
  if (!valid_handle(handle)) return CUTENSOR_STATUS_NOT_INITIALIZED;
  if (plan == nullptr || alpha == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  if (plan->geometry.total == 0) return CUTENSOR_STATUS_SUCCESS;
  if (A == nullptr || B == nullptr) return CUTENSOR_STATUS_INVALID_VALUE;
  switch (plan->type) {
    case CUDA_R_32F: return launch<float>(plan, alpha, A, B, stream);
    case CUDA_R_64F: return launch<double>(plan, alpha, A, B, stream);
    case CUDA_C_32F: return launch<ComplexF>(plan, alpha, A, B, stream);
    case CUDA_C_64F: return launch<ComplexD>(plan, alpha, A, B, stream);
    default: return CUTENSOR_STATUS_NOT_SUPPORTED;
  }
}

const char* cutensorGetErrorString(const cutensorStatus_t error) {
  switch (error) {
    case CUTENSOR_STATUS_SUCCESS: return "CUTENSOR_STATUS_SUCCESS";
    case CUTENSOR_STATUS_NOT_INITIALIZED: return "CUTENSOR_STATUS_NOT_INITIALIZED";
    case CUTENSOR_STATUS_ALLOC_FAILED: return "CUTENSOR_STATUS_ALLOC_FAILED";
    case CUTENSOR_STATUS_INVALID_VALUE: return "CUTENSOR_STATUS_INVALID_VALUE";
    case CUTENSOR_STATUS_ARCH_MISMATCH: return "CUTENSOR_STATUS_ARCH_MISMATCH";
    case CUTENSOR_STATUS_MAPPING_ERROR: return "CUTENSOR_STATUS_MAPPING_ERROR";
    case CUTENSOR_STATUS_EXECUTION_FAILED: return "CUTENSOR_STATUS_EXECUTION_FAILED";
    case CUTENSOR_STATUS_INTERNAL_ERROR: return "CUTENSOR_STATUS_INTERNAL_ERROR";
    case CUTENSOR_STATUS_NOT_SUPPORTED: return "CUTENSOR_STATUS_NOT_SUPPORTED (cutensor_permute_shim: permutations of R/C 32F/64F only)";
    case CUTENSOR_STATUS_LICENSE_ERROR: return "CUTENSOR_STATUS_LICENSE_ERROR";
    case CUTENSOR_STATUS_CUBLAS_ERROR: return "CUTENSOR_STATUS_CUBLAS_ERROR";
    case CUTENSOR_STATUS_CUDA_ERROR: return "CUTENSOR_STATUS_CUDA_ERROR";
    case CUTENSOR_STATUS_INSUFFICIENT_WORKSPACE: return "CUTENSOR_STATUS_INSUFFICIENT_WORKSPACE";
    case CUTENSOR_STATUS_INSUFFICIENT_DRIVER: return "CUTENSOR_STATUS_INSUFFICIENT_DRIVER";
    case CUTENSOR_STATUS_IO_ERROR: return "CUTENSOR_STATUS_IO_ERROR";
    default: return "<unknown cutensorStatus_t>";
  }
}

// The header version it was compiled against: cuDecomp reads this to decide
// whether to work around a bug of cuTENSOR 2.3-2.5, which the shim does not have.
size_t cutensorGetVersion() { return CUTENSOR_VERSION; }

size_t cutensorGetCudartVersion() { return CUDART_VERSION; }

}  // extern "C"
