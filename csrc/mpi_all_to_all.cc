// mpi_all_to_all: the all-to-all of a distributed transpose, done by MPI on the CPU.
//
// On CPU clusters JAX's own collectives go through gloo over TCP; this handler
// hands the exchange to the cluster's MPI instead. The caller (Python) arranges
// the local block as (P, ...) with P the communicator size: row j goes to rank
// j, and row j of the result came from rank j (lax.all_to_all's contract once
// the split axis is moved to the front).
//
// Ordering: a second buffer, the "order" token (any small array), is copied
// from input to output. Python threads it from one exchange to the next, so
// XLA cannot run two exchanges of one program concurrently or in a different
// order on different ranks (either would mismatch the collectives). The call is
// declared side-effecting in Python so XLA never drops or duplicates it.
// Separate chains in one program (two darray ops in one jit) are ordered only by
// data dependence, so before moving data every rank checks that the whole
// communicator is at the same exchange (`call_id`, CheckSameExchange in
// mpi_common.h) and returns an error otherwise.
//
// Errors (MPI not initialised, wrong shapes, any MPI error code) are returned
// as ffi::Error; the communicator must use MPI_ERRORS_RETURN (mpi4py's default)
// for MPI's own errors to come back rather than abort. MPI is called through
// mpi_api.h, bound at run time to the library mpi4py loaded.
#include <cstring>
#include <string>

#include "mpi_common.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

constexpr const char* kName = "darray_mpi_all_to_all";

ffi::Error AllToAll(ffi::AnyBuffer x, ffi::AnyBuffer order_in,
                    ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> order_out, int64_t comm,
                    int64_t call_id) {
  if (auto err = CheckMpiReady(kName); !err.success()) return err;
  const ExchangeGuard guard;
  if (auto err = guard.Check(kName); !err.success()) return err;
  int size = 0;
  if (int rc = mpi::CommSize(comm, &size); rc != 0) return MpiError(kName, "MPI_Comm_size", rc);
  const auto dims = x.dimensions();
  if (dims.size() == 0 || dims[0] != size) {
    return Invalid(kName, "the input's leading dimension must equal the communicator size " +
                              std::to_string(size) + ", got " +
                              (dims.size() ? std::to_string(dims[0]) : std::string("a scalar")));
  }
  if (auto err = CheckOutputs(kName, x, order_in, y, order_out); !err.success()) return err;
  int count = 0;
  if (auto err = CheckCount(kName, x.size_bytes() / static_cast<size_t>(size), "bytes per rank",
                            "split the exchange", &count);
      !err.success()) {
    return err;
  }
  if (auto err = CheckSameExchange(kName, comm, call_id); !err.success()) return err;
  const mpi::Handle byte = mpi::Consts().byte;
  if (int rc = mpi::Alltoall(x.untyped_data(), count, byte, y->untyped_data(), count, byte, comm);
      rc != 0) {
    return MpiError(kName, "MPI_Alltoall", rc);
  }
  if (order_in.size_bytes()) {
    std::memcpy(order_out->untyped_data(), order_in.untyped_data(),
                order_in.size_bytes());
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: data and order token in; exchanged data and the token out; the
// communicator's C handle (mpi4py: MPI._handleof(comm)) as the attribute `comm`, and the
// exchange's id (identical on every rank at the same exchange; see CheckSameExchange) as
// `call_id`.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayMpiAllToAllCpu, darray::AllToAll,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("comm")
                                  .Attr<int64_t>("call_id"));
