// mpi_common.h: what the MPI handlers share: the checks every exchange makes before moving data
// (MPI usable, outputs shaped like inputs, counts within MPI's int), the exchange guards, and
// the error for a failed MPI call. MPI itself is reached through mpi_api.h (resolved at run time).
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mpi_api.h"
#include "xla/ffi/api/ffi.h"

namespace darray {

// `handler`: `call` returned MPI error `code`, with MPI's own text for it.
inline xla::ffi::Error MpiError(const char* handler, const char* call, int code) {
  return xla::ffi::Error(xla::ffi::ErrorCode::kInternal,
                         std::string(handler) + ": " + call + " returned MPI error " +
                             std::to_string(code) + ": " + mpi::ErrorString(code));
}

inline xla::ffi::Error Invalid(const char* handler, const std::string& what) {
  return xla::ffi::Error::InvalidArgument(std::string(handler) + ": " + what);
}

// MPI can be called: the library is bound (darray binds it from mpi4py before the first
// exchange) and initialised, not yet finalised.
inline xla::ffi::Error CheckMpiReady(const char* handler) {
  int initialized = 0, finalized = 0;
  if (mpi::Bound()) {
    mpi::Initialized(&initialized);
    mpi::Finalized(&finalized);
  }
  if (!initialized || finalized) {
    return Invalid(handler,
                   "MPI is not initialised (or already finalised); import mpi4py.MPI "
                   "before the first call");
  }
  return xla::ffi::Error::Success();
}

// The exchanged data comes back with the input's dtype and size, and the order token is copied
// through unchanged in size.
inline xla::ffi::Error CheckOutputs(const char* handler, const xla::ffi::AnyBuffer& x,
                                    const xla::ffi::AnyBuffer& order_in,
                                    xla::ffi::Result<xla::ffi::AnyBuffer>& y,
                                    xla::ffi::Result<xla::ffi::AnyBuffer>& order_out) {
  if (y->element_type() != x.element_type() || y->size_bytes() != x.size_bytes()) {
    return Invalid(handler, "output must have the input's dtype and size");
  }
  if (order_out->size_bytes() != order_in.size_bytes()) {
    return Invalid(handler, "the order token's output must match its input");
  }
  return xla::ffi::Error::Success();
}

// MPI counts are ints: `bytes` (what one message carries) must fit, else `fix` says what to do.
inline xla::ffi::Error CheckCount(const char* handler, size_t bytes, const char* what,
                                  const char* fix, int* count) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return Invalid(handler, std::to_string(bytes) + " " + what + " exceed MPI's int count; " +
                                fix);
  }
  *count = static_cast<int>(bytes);
  return xla::ffi::Error::Success();
}

// Exchanges of one program are chained by the order token, so they never overlap. Two that
// do overlap in one process (exchanges of separate, unchained programs that XLA ran
// concurrently) could pair with the wrong exchange on another rank and silently mix data;
// this guard turns that into an error instead.
class ExchangeGuard {
 public:
  ExchangeGuard() : overlapping_(Count().fetch_add(1) != 0) {}
  ~ExchangeGuard() { Count().fetch_sub(1); }
  ExchangeGuard(const ExchangeGuard&) = delete;
  ExchangeGuard& operator=(const ExchangeGuard&) = delete;

  // An error naming `handler` when another MPI exchange is running in this process.
  xla::ffi::Error Check(const char* handler) const {
    if (!overlapping_) return xla::ffi::Error::Success();
    return xla::ffi::Error(
        xla::ffi::ErrorCode::kFailedPrecondition,
        std::string(handler) +
            ": another MPI exchange is running concurrently in this process; exchanges must "
            "be chained by their order token (one darray op's exchanges always are)");
  }

 private:
  static std::atomic<int>& Count() {
    static std::atomic<int> count{0};  // one per process: inline function, shared by all TUs
    return count;
  }
  bool overlapping_;
};

// Every rank of `comm` must be at the same exchange before any data moves. The order token
// orders the exchanges of one token chain, but two chains in one program (two darray ops in one
// user jit) are ordered by XLA only through data dependence: the CPU runtime may run them in a
// different order on different ranks, and exchanges with equal byte counts would then pair A on
// one rank with B on another and silently mix data. `call_id` is computed identically on every
// rank at trace time (kind, shape, dtype, communicator size, permutation, position in its chain);
// one MPI_Allreduce(MAX) of {id, -id} gives the largest and the smallest id in one step, and
// they differ exactly when some rank is at another exchange. The ids are below 2^62, so -id
// cannot overflow.
inline xla::ffi::Error CheckSameExchange(const char* handler, mpi::Handle comm, int64_t call_id) {
  int64_t mine[2] = {call_id, -call_id};
  int64_t extremes[2] = {0, 0};
  const auto& c = mpi::Consts();
  const int rc = mpi::Allreduce(mine, extremes, 2, c.int64, c.op_max, comm);
  if (rc != 0) {
    return xla::ffi::Error(xla::ffi::ErrorCode::kInternal,
                           std::string(handler) + ": the exchange check's MPI_Allreduce " +
                               "returned MPI error " + std::to_string(rc) + ": " +
                               mpi::ErrorString(rc));
  }
  const int64_t largest = extremes[0], smallest = -extremes[1];
  if (largest == smallest) return xla::ffi::Error::Success();
  return xla::ffi::Error(
      xla::ffi::ErrorCode::kFailedPrecondition,
      std::string(handler) +
          ": the ranks of the communicator reached different MPI exchanges (this rank's "
          "exchange id " + std::to_string(call_id) + ", ids on the communicator range from " +
          std::to_string(smallest) + " to " + std::to_string(largest) +
          "); no data was moved. XLA ran two independent exchanges (e.g. two darray ops in "
          "one jitted function that do not depend on each other) in a different order on "
          "different ranks, or the ranks ran different programs. Make one op depend on the "
          "other's result, or put them in separate jitted functions called in the same order "
          "on every rank. Exchanges still pending on other ranks may have been paired with "
          "this check, so MPI's state on this communicator may be inconsistent: end the run "
          "(or stop using the communicator) rather than retry.");
}

}  // namespace darray
