// pad_axis, CPU handler and the geometry check shared with the CUDA handler.
#include "pad_axis.h"

#include <cstring>

namespace darray {
namespace {

// Names for the dtypes we may meet, so an error shows what the user passed.
std::string DTypeName(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::F32: return "float32";
    case ffi::DataType::F64: return "float64";
    case ffi::DataType::C64: return "complex64";
    case ffi::DataType::C128: return "complex128";
    case ffi::DataType::F16: return "float16";
    case ffi::DataType::BF16: return "bfloat16";
    case ffi::DataType::S32: return "int32";
    case ffi::DataType::S64: return "int64";
    case ffi::DataType::PRED: return "bool";
    default: return "XLA dtype #" + std::to_string(static_cast<int>(t));
  }
}

std::string DimsString(ffi::AnyBuffer::Dimensions dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += std::to_string(dims[i]);
    if (i + 1 < dims.size() || dims.size() == 1) s += ",";
    if (i + 1 < dims.size()) s += " ";
  }
  return s + ")";
}

}  // namespace

ffi::Error CheckPadAxis(const ffi::AnyBuffer& x, const ffi::AnyBuffer& y,
                        int64_t axis, PadGeometry* geom) {
  const ffi::DataType dt = x.element_type();
  if (dt != ffi::DataType::F32 && dt != ffi::DataType::F64 &&
      dt != ffi::DataType::C64 && dt != ffi::DataType::C128) {
    return ffi::Error::InvalidArgument(
        "darray_pad_axis: unsupported dtype " + DTypeName(dt) +
        "; expected float32, float64, complex64 or complex128");
  }
  if (y.element_type() != dt) {
    return ffi::Error::InvalidArgument(
        "darray_pad_axis: output dtype " + DTypeName(y.element_type()) +
        " differs from input dtype " + DTypeName(dt));
  }
  const auto in = x.dimensions();
  const auto out = y.dimensions();
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank == 0 || static_cast<int64_t>(out.size()) != rank) {
    return ffi::Error::InvalidArgument(
        "darray_pad_axis: input shape " + DimsString(in) + " and output shape " +
        DimsString(out) + " must have the same rank >= 1");
  }
  if (axis < -rank || axis >= rank) {
    return ffi::Error::InvalidArgument(
        "darray_pad_axis: axis=" + std::to_string(axis) +
        " is out of range for rank " + std::to_string(rank) +
        "; expected -" + std::to_string(rank) + " <= axis < " +
        std::to_string(rank));
  }
  const int64_t ax = axis < 0 ? axis + rank : axis;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != ax && in[i] != out[i]) {
      return ffi::Error::InvalidArgument(
          "darray_pad_axis: output shape " + DimsString(out) +
          " may differ from input shape " + DimsString(in) +
          " only on axis " + std::to_string(ax));
    }
  }
  if (out[ax] < in[ax]) {
    return ffi::Error::InvalidArgument(
        "darray_pad_axis: cannot pad axis " + std::to_string(ax) +
        " from length " + std::to_string(in[ax]) + " down to " +
        std::to_string(out[ax]) + "; the padded length must be >= the input length");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= in[i];
  for (int64_t i = ax + 1; i < rank; ++i) inner *= in[i];
  const size_t item = ffi::ByteWidth(dt);
  geom->outer = outer;
  geom->in_row = static_cast<size_t>(in[ax] * inner) * item;
  geom->out_row = static_cast<size_t>(out[ax] * inner) * item;
  return ffi::Error::Success();
}

namespace {

// Row by row: copy the input row, zero the tail. All zero bytes is +0.0 for
// every accepted (IEEE float or complex) dtype.
ffi::Error PadAxisCpu(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                      int64_t axis) {
  PadGeometry g;
  if (ffi::Error err = CheckPadAxis(x, *y, axis, &g); err.failure()) {
    return err;
  }
  const char* src = static_cast<const char*>(x.untyped_data());
  char* dst = static_cast<char*>(y->untyped_data());
  for (int64_t r = 0; r < g.outer; ++r) {
    if (g.in_row) std::memcpy(dst + r * g.out_row, src + r * g.in_row, g.in_row);
    if (g.out_row > g.in_row) {
      std::memset(dst + r * g.out_row + g.in_row, 0, g.out_row - g.in_row);
    }
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: one input buffer, one output buffer whose shape (set by the caller)
// fixes the padded length, and the int64 attribute `axis`.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayPadAxisCpu, darray::PadAxisCpu,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("axis"));
