// mpi_common.h: what the MPI handlers share.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace darray {

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
inline xla::ffi::Error CheckSameExchange(const char* handler, MPI_Comm comm, int64_t call_id) {
  int64_t mine[2] = {call_id, -call_id};
  int64_t extremes[2] = {0, 0};
  const int rc = MPI_Allreduce(mine, extremes, 2, MPI_INT64_T, MPI_MAX, comm);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
    return xla::ffi::Error(xla::ffi::ErrorCode::kInternal,
                           std::string(handler) + ": the exchange check's MPI_Allreduce " +
                               "returned MPI error " + std::to_string(rc) + ": " +
                               std::string(text, len));
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
