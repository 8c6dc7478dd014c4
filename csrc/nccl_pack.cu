// The NCCL backend's pack and unpack: one generic strided copy kernel (see
// nccl_common.h). The pack makes the exchanged axis major-most (one piece per
// peer, contiguous) and zero-fills the padding of an uneven split; the unpack
// puts every received piece in its place along the axis that became local and
// drops the padding. Each is one pass: the contiguous side is read or written
// in order, so a warp's accesses coalesce on that side.
#include <cuda_runtime.h>

#include "nccl_common.h"

namespace darray {
namespace {

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <typename T, bool kGather>
__global__ void StridedCopy(CopyDesc d, const T* __restrict__ in, T* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < d.total;
       i += step) {
    int64_t j[kMaxCopyDims];
    int64_t rest = i, offset = 0;
    for (int k = d.ndims - 1; k >= 0; --k) {
      j[k] = rest % d.len[k];
      rest /= d.len[k];
      offset += j[k] * d.stride[k];
    }
    bool valid = true;
    for (int c = 0; c < d.nchecks; ++c) {
      valid &= j[d.check_digit[c]] * d.len[d.check_chunk[c]] + j[d.check_chunk[c]] <
               d.check_limit[c];
    }
    if (kGather) {
      out[i] = valid ? in[offset] : T{};
    } else if (valid) {
      out[offset] = in[i];
    }
  }
}

template <typename T>
cudaError_t Launch(const CopyDesc& d, bool gather, const void* in, void* out,
                   cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t wanted = (d.total + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < (1 << 20) ? wanted : (1 << 20));
  if (gather) {
    StridedCopy<T, true><<<blocks, kThreads, 0, stream>>>(d, static_cast<const T*>(in),
                                                         static_cast<T*>(out));
  } else {
    StridedCopy<T, false><<<blocks, kThreads, 0, stream>>>(d, static_cast<const T*>(in),
                                                          static_cast<T*>(out));
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchStridedCopy(const CopyDesc& desc, bool gather, int64_t elem_bytes,
                              const void* in, void* out, cudaStream_t stream) {
  if (desc.total == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1: return Launch<uint8_t>(desc, gather, in, out, stream);
    case 2: return Launch<uint16_t>(desc, gather, in, out, stream);
    case 4: return Launch<uint32_t>(desc, gather, in, out, stream);
    case 8: return Launch<uint64_t>(desc, gather, in, out, stream);
    case 16: return Launch<Bytes16>(desc, gather, in, out, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace darray
