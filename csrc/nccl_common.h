// Shared by the NCCL backend's handlers (nccl_ffi.cc) and its copy kernels
// (nccl_pack.cu): the descriptor of one strided copy, and the one launcher.
//
// A pack or unpack is one pass over a buffer seen as an n-d index space
// (`len`, row-major): element i of the contiguous side pairs with offset
// sum(j[d] * stride[d]) of the strided side. `checks` drop the elements that
// fall into padding: (digit, chunk, limit) keeps j[digit] * len[chunk] +
// j[chunk] < limit. Gather (pack): out[i] = valid ? in[offset] : 0. Scatter
// (unpack): if valid, out[offset] = in[i]. darray/_src/backends/nccl.py
// builds the descriptors (and emulates them in numpy for its CPU tests).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace darray {

constexpr int kMaxCopyDims = 12;
constexpr int kMaxCopyChecks = 4;

struct CopyDesc {
  int32_t ndims = 0;
  int32_t nchecks = 0;
  int64_t total = 0;  // product of len
  int64_t len[kMaxCopyDims] = {};
  int64_t stride[kMaxCopyDims] = {};
  int32_t check_digit[kMaxCopyChecks] = {};
  int32_t check_chunk[kMaxCopyChecks] = {};
  int64_t check_limit[kMaxCopyChecks] = {};
};

// One kernel launch on `stream`; elem_bytes in {1, 2, 4, 8, 16}. Returns the
// launch error (cudaSuccess when it was queued).
cudaError_t LaunchStridedCopy(const CopyDesc& desc, bool gather, int64_t elem_bytes,
                              const void* in, void* out, cudaStream_t stream);

}  // namespace darray
