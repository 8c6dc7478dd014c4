// XLA FFI handlers that run darray's pencil transposes and halo fills through
// cuDecomp on NVIDIA GPUs.
//
// Handlers never create anything collective: the cuDecomp handle and grid
// descriptors are created from Python on first use (cudecomp_bind.cc, a
// collective over an mpi4py communicator) and cached there under the full key;
// a handler receives their addresses as attributes and only looks them up.
//
// Buffers: darray's blocks are C-ordered arrays (a0, a1, a2). cuDecomp's
// default memory order (transpose_axis_contiguous all false) stores every
// pencil with X fastest, where X is darray's LAST axis: the same bytes. Python
// reverses the axis order once (darray/_src/backends/cudecomp.py, to_cudecomp);
// nothing here permutes axes.
//
// Workspace: a second result buffer that XLA allocates (see Workspace below).
// NVSHMEM backends would need cudecompMalloc'd symmetric-heap memory instead;
// Python refuses them with that reason.
//
// Errors: every cuDecomp or CUDA failure is returned as an ffi::Error that
// names the call and its code; nothing here aborts the process.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cudecomp_common.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

ffi::Error Fail(const char* handler, const std::string& what) {
  return ffi::Error(ffi::ErrorCode::kInternal, std::string(handler) + ": " + what);
}

bool ToCudecompType(ffi::DataType t, cudecompDataType_t* out, int64_t* bytes) {
  switch (t) {
    case ffi::DataType::F32: *out = CUDECOMP_FLOAT; *bytes = 4; return true;
    case ffi::DataType::F64: *out = CUDECOMP_DOUBLE; *bytes = 8; return true;
    case ffi::DataType::C64: *out = CUDECOMP_FLOAT_COMPLEX; *bytes = 8; return true;
    case ffi::DataType::C128: *out = CUDECOMP_DOUBLE_COMPLEX; *bytes = 16; return true;
    default: return false;
  }
}

// The pencil's element count as cuDecomp sees it, to check the buffers XLA
// hands us against the descriptor before cuDecomp touches them.
ffi::Error PencilSize(const char* handler, cudecompHandle_t handle,
                      cudecompGridDesc_t grid, int32_t axis,
                      const int32_t* halo, int64_t* size) {
  cudecompPencilInfo_t info;
  cudecompResult_t r = cudecompGetPencilInfo(handle, grid, &info, axis, halo, nullptr);
  if (r != CUDECOMP_RESULT_SUCCESS) {
    return Fail(handler, CudecompFailure("cudecompGetPencilInfo", r));
  }
  *size = info.size;
  return ffi::Error::Success();
}

// The workspace is a second result buffer of the call (uint8, sized by Python from cuDecomp's
// query): XLA allocates it in its buffer assignment like any temporary, so it counts in
// XLA's memory accounting and is reused after the call. (XLA's FFI scratch allocator was
// measured to refuse device allocations inside a GPU executable: jax 0.11.2, H100.)
ffi::Error Workspace(const char* handler, ffi::Result<ffi::AnyBuffer>& buffer,
                     int64_t elements, int64_t elem_bytes, void** work) {
  const size_t bytes = static_cast<size_t>(elements) * static_cast<size_t>(elem_bytes);
  if (buffer->size_bytes() < bytes) {
    return ffi::Error::InvalidArgument(
        std::string(handler) + ": the workspace buffer has " +
        std::to_string(buffer->size_bytes()) + " bytes; cuDecomp needs " +
        std::to_string(bytes));
  }
  *work = buffer->untyped_data();
  return ffi::Error::Success();
}

constexpr const char* kTranspose = "darray_cudecomp_transpose";

// One pencil transpose (op: kXToY, kYToZ, kZToY, kYToX), out of place.
ffi::Error Transpose(cudaStream_t stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                     ffi::Result<ffi::AnyBuffer> workspace, int64_t handle_addr,
                     int64_t grid_addr, int32_t op, int64_t work_elements) {
  auto handle = reinterpret_cast<cudecompHandle_t>(handle_addr);
  auto grid = reinterpret_cast<cudecompGridDesc_t>(grid_addr);
  if (handle == nullptr || grid == nullptr) {
    return ffi::Error::InvalidArgument(std::string(kTranspose) +
                                       ": the cuDecomp handle or grid descriptor is null");
  }
  if (op < kXToY || op > kYToX) {
    return ffi::Error::InvalidArgument(std::string(kTranspose) + ": op=" +
                                       std::to_string(op) + " is not one of 0..3");
  }
  cudecompDataType_t dtype;
  int64_t elem_bytes = 0;
  if (!ToCudecompType(x.element_type(), &dtype, &elem_bytes) ||
      y->element_type() != x.element_type()) {
    return ffi::Error::InvalidArgument(
        std::string(kTranspose) +
        ": input and output must share one of float32, float64, complex64, complex128");
  }
  const int32_t no_halo[3] = {0, 0, 0};
  int64_t in_size = 0, out_size = 0;
  if (auto e = PencilSize(kTranspose, handle, grid, InputPencil(op), no_halo, &in_size);
      e.failure()) {
    return e;
  }
  if (auto e = PencilSize(kTranspose, handle, grid, OutputPencil(op), no_halo, &out_size);
      e.failure()) {
    return e;
  }
  if (static_cast<int64_t>(x.element_count()) != in_size ||
      static_cast<int64_t>(y->element_count()) != out_size) {
    return ffi::Error::InvalidArgument(
        std::string(kTranspose) + ": buffers of " + std::to_string(x.element_count()) +
        " -> " + std::to_string(y->element_count()) + " elements do not match the grid's " +
        "pencils (" + std::to_string(in_size) + " -> " + std::to_string(out_size) + ")");
  }
  void* work = nullptr;
  if (auto e = Workspace(kTranspose, workspace, work_elements, elem_bytes, &work);
      e.failure()) {
    return e;
  }
  void* in = x.untyped_data();
  void* out = y->untyped_data();
  cudecompResult_t r = CUDECOMP_RESULT_SUCCESS;
  const char* call = "";
  switch (op) {
    case kXToY:
      call = "cudecompTransposeXToY";
      r = cudecompTransposeXToY(handle, grid, in, out, work, dtype, nullptr, nullptr,
                                nullptr, nullptr, stream);
      break;
    case kYToZ:
      call = "cudecompTransposeYToZ";
      r = cudecompTransposeYToZ(handle, grid, in, out, work, dtype, nullptr, nullptr,
                                nullptr, nullptr, stream);
      break;
    case kZToY:
      call = "cudecompTransposeZToY";
      r = cudecompTransposeZToY(handle, grid, in, out, work, dtype, nullptr, nullptr,
                                nullptr, nullptr, stream);
      break;
    default:
      call = "cudecompTransposeYToX";
      r = cudecompTransposeYToX(handle, grid, in, out, work, dtype, nullptr, nullptr,
                                nullptr, nullptr, stream);
      break;
  }
  if (r != CUDECOMP_RESULT_SUCCESS) return Fail(kTranspose, CudecompFailure(call, r));
  if (cudaError_t c = cudaGetLastError(); c != cudaSuccess) {
    return Fail(kTranspose, std::string("CUDA error after ") + call + ": " +
                                cudaGetErrorName(c) + ": " + cudaGetErrorString(c));
  }
  return ffi::Error::Success();
}

constexpr const char* kHalo = "darray_cudecomp_halo";

// Fill the ghost cells of one pencil (pencil axis `axis`, cuDecomp's order)
// along the cuDecomp dims whose halo extent is > 0. The block arrives with its
// ghost cells already allocated (halo extents on both sides of every dim).
// cuDecomp updates in place: when XLA did not alias y to x (aliasing is
// declared by the caller, never assumed), x is copied to y first.
ffi::Error Halo(cudaStream_t stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                ffi::Result<ffi::AnyBuffer> workspace, int64_t handle_addr, int64_t grid_addr,
                int32_t axis, ffi::Span<const int64_t> extents,
                ffi::Span<const int64_t> periodic, int64_t work_elements) {
  auto handle = reinterpret_cast<cudecompHandle_t>(handle_addr);
  auto grid = reinterpret_cast<cudecompGridDesc_t>(grid_addr);
  if (handle == nullptr || grid == nullptr) {
    return ffi::Error::InvalidArgument(std::string(kHalo) +
                                       ": the cuDecomp handle or grid descriptor is null");
  }
  if (axis < 0 || axis > 2 || extents.size() != 3 || periodic.size() != 3) {
    return ffi::Error::InvalidArgument(
        std::string(kHalo) + ": expected axis in 0..2 and 3 extents and 3 periodic flags");
  }
  cudecompDataType_t dtype;
  int64_t elem_bytes = 0;
  if (!ToCudecompType(x.element_type(), &dtype, &elem_bytes) ||
      y->element_type() != x.element_type() || y->size_bytes() != x.size_bytes()) {
    return ffi::Error::InvalidArgument(
        std::string(kHalo) + ": input and output must be equal-sized buffers of float32, "
                             "float64, complex64 or complex128");
  }
  int32_t halo[3];
  bool periods[3];
  for (int i = 0; i < 3; ++i) {
    halo[i] = static_cast<int32_t>(extents[i]);
    periods[i] = periodic[i] != 0;
  }
  int64_t size = 0;
  if (auto e = PencilSize(kHalo, handle, grid, axis, halo, &size); e.failure()) return e;
  if (static_cast<int64_t>(x.element_count()) != size) {
    return ffi::Error::InvalidArgument(
        std::string(kHalo) + ": a buffer of " + std::to_string(x.element_count()) +
        " elements does not match the grid's pencil with halos (" + std::to_string(size) +
        ")");
  }
  if (y->untyped_data() != x.untyped_data()) {
    if (cudaError_t c = cudaMemcpyAsync(y->untyped_data(), x.untyped_data(), x.size_bytes(),
                                        cudaMemcpyDeviceToDevice, stream);
        c != cudaSuccess) {
      return Fail(kHalo, std::string("cudaMemcpyAsync: ") + cudaGetErrorName(c));
    }
  }
  void* work = nullptr;
  if (auto e = Workspace(kHalo, workspace, work_elements, elem_bytes, &work);
      e.failure()) {
    return e;
  }
  void* data = y->untyped_data();
  for (int32_t dim = 0; dim < 3; ++dim) {
    if (halo[dim] == 0) continue;
    cudecompResult_t r;
    const char* call;
    if (axis == 0) {
      call = "cudecompUpdateHalosX";
      r = cudecompUpdateHalosX(handle, grid, data, work, dtype, halo, periods, dim, nullptr,
                               stream);
    } else if (axis == 1) {
      call = "cudecompUpdateHalosY";
      r = cudecompUpdateHalosY(handle, grid, data, work, dtype, halo, periods, dim, nullptr,
                               stream);
    } else {
      call = "cudecompUpdateHalosZ";
      r = cudecompUpdateHalosZ(handle, grid, data, work, dtype, halo, periods, dim, nullptr,
                               stream);
    }
    if (r != CUDECOMP_RESULT_SUCCESS) return Fail(kHalo, CudecompFailure(call, r));
  }
  if (cudaError_t c = cudaGetLastError(); c != cudaSuccess) {
    return Fail(kHalo, std::string("CUDA error after the halo update: ") +
                           cudaGetErrorName(c) + ": " + cudaGetErrorString(c));
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayCudecompTransposeCuda, darray::Transpose,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("handle")
                                  .Attr<int64_t>("grid")
                                  .Attr<int32_t>("op")
                                  .Attr<int64_t>("work_elements"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayCudecompHaloCuda, darray::Halo,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("handle")
                                  .Attr<int64_t>("grid")
                                  .Attr<int32_t>("axis")
                                  .Attr<xla::ffi::Span<const int64_t>>("extents")
                                  .Attr<xla::ffi::Span<const int64_t>>("periodic")
                                  .Attr<int64_t>("work_elements"));
