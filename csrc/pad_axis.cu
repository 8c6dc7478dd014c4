// pad_axis, CUDA handler: the same geometry as the CPU handler, done as one
// memset of the output plus one strided 2-D copy, both on XLA's stream.
#include <cuda_runtime.h>

#include "pad_axis.h"

namespace darray {
namespace {

ffi::Error CudaError(const char* what, cudaError_t e) {
  return ffi::Error::Internal(std::string("darray_pad_axis (CUDA): ") + what +
                              " failed: " + cudaGetErrorString(e));
}

ffi::Error PadAxisCuda(cudaStream_t stream, ffi::AnyBuffer x,
                       ffi::Result<ffi::AnyBuffer> y, int64_t axis) {
  PadGeometry g;
  if (ffi::Error err = CheckPadAxis(x, *y, axis, &g); err.failure()) {
    return err;
  }
  if (g.outer == 0 || g.out_row == 0) return ffi::Error::Success();
  if (g.out_row > g.in_row) {
    cudaError_t e = cudaMemsetAsync(y->untyped_data(), 0,
                                    g.out_row * static_cast<size_t>(g.outer), stream);
    if (e != cudaSuccess) return CudaError("cudaMemsetAsync", e);
  }
  if (g.in_row > 0) {
    cudaError_t e = cudaMemcpy2DAsync(y->untyped_data(), g.out_row, x.untyped_data(),
                                      g.in_row, g.in_row, static_cast<size_t>(g.outer),
                                      cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return CudaError("cudaMemcpy2DAsync", e);
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: XLA's CUDA stream from the context, then the same argument, result
// and `axis` attribute as the CPU handler.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayPadAxisCuda, darray::PadAxisCuda,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("axis"));
