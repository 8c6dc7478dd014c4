// pad_axis: zero-pad the end of one axis of a buffer.
//
// darray makes an uneven split even by padding the split axis to a multiple of
// the mesh size (see Layout); this op writes that padded copy in one pass. The
// geometry check is shared by the CPU and CUDA handlers so both reject the same
// inputs with the same messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace darray {

namespace ffi = ::xla::ffi;

// A padded copy seen as `outer` rows: each row holds `in_row` bytes of input
// followed by `out_row - in_row` bytes of zeros.
struct PadGeometry {
  int64_t outer = 1;    // product of the dims before the padded axis
  size_t in_row = 0;    // bytes of one input row (axis length x inner x itemsize)
  size_t out_row = 0;   // bytes of one output row
};

// Checks dtype, rank, axis and dims; fills `geom` on success. `axis` may be
// negative (counted from the end), which keeps it valid when vmap prepends
// batch dimensions.
ffi::Error CheckPadAxis(const ffi::AnyBuffer& x, const ffi::AnyBuffer& y,
                        int64_t axis, PadGeometry* geom);

}  // namespace darray

// Handler symbols, defined in pad_axis.cc / pad_axis.cu and exported as capsules
// by module.cc.
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayPadAxisCpu);
#ifdef DARRAY_HAS_CUDA
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayPadAxisCuda);
#endif
