// mpi_common.h: what the MPI handlers share.
#pragma once

#include <atomic>
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

}  // namespace darray
