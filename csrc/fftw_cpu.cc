// fftw_cpu: the XLA FFI handler that runs a block's local FFT (c2c, r2c, c2r along any axes)
// with FFTW, the optional provider of fftw_provider.h. Python (darray/_src/kernels/fftw.py)
// calls it only after the library is loaded; errors are returned to XLA, never raised as
// crashes.
#include <cstdint>
#include <string>
#include <vector>

#include "fftw_provider.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

ffi::Error FftwImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                    ffi::Span<const int64_t> axes, int64_t kind, int64_t forward,
                    int64_t measure, double scale) {
  constexpr const char* kName = "darray_fftw: ";
  fftw::Transform t;
  if (kind < 0 || kind > 2) {
    return ffi::Error::InvalidArgument(std::string(kName) + "kind " + std::to_string(kind) +
                                       "; expected 0 (c2c), 1 (r2c) or 2 (c2r)");
  }
  t.kind = static_cast<fftw::Kind>(kind);
  const ffi::DataType real = t.kind == fftw::Kind::kR2C ? x.element_type() : y->element_type();
  const ffi::DataType cplx = t.kind == fftw::Kind::kR2C ? y->element_type() : x.element_type();
  if (real == ffi::DataType::F64 || cplx == ffi::DataType::C128) {
    t.precision = fftw::Precision::kDouble;
  } else {
    t.precision = fftw::Precision::kSingle;
  }
  const bool doubles = t.precision == fftw::Precision::kDouble;
  const bool types_ok =
      (t.kind == fftw::Kind::kC2C)
          ? (x.element_type() == y->element_type() &&
             (cplx == ffi::DataType::C128 || cplx == ffi::DataType::C64))
          : (real == (doubles ? ffi::DataType::F64 : ffi::DataType::F32) &&
             cplx == (doubles ? ffi::DataType::C128 : ffi::DataType::C64));
  if (!types_ok) {
    return ffi::Error::InvalidArgument(std::string(kName) +
                                       "dtypes do not fit the transform kind (complex64/128 "
                                       "for c2c, float32/64 with complex64/128 for r2c/c2r)");
  }
  t.forward = forward != 0;
  t.measure = measure != 0;
  t.scale = scale;
  const auto in = x.dimensions();
  const auto out = y->dimensions();
  t.in_dims.assign(in.begin(), in.end());
  t.out_dims.assign(out.begin(), out.end());
  const int64_t rank = static_cast<int64_t>(t.in_dims.size());
  for (int64_t a : axes) {
    // Counted from the end: vmap's leading batch dims do not move them.
    t.axes.push_back(a < 0 ? a + rank : a);
  }
  if (x.element_count() == 0) return ffi::Error::Success();
  std::string err = fftw::Execute(t, x.untyped_data(), y->untyped_data());
  if (!err.empty()) return ffi::Error::Internal(std::string(kName) + err);
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: x in, its transform out; axes (int64 array, negative: counted from the end; for
// r2c/c2r the last one is the halved axis), kind (0 c2c, 1 r2c, 2 c2r), forward (c2c's sign),
// measure (FFTW_MEASURE instead of FFTW_ESTIMATE), scale (applied to the output).
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayFftwCpu, darray::FftwImpl,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<xla::ffi::Span<const int64_t>>("axes")
                                  .Attr<int64_t>("kind")
                                  .Attr<int64_t>("forward")
                                  .Attr<int64_t>("measure")
                                  .Attr<double>("scale"));
