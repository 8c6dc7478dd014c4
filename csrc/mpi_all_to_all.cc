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
// for MPI's own errors to come back rather than abort.
#include <mpi.h>

#include <climits>
#include <cstring>
#include <string>

#include "mpi_common.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

constexpr const char* kName = "darray_mpi_all_to_all";

ffi::Error MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  return ffi::Error(ffi::ErrorCode::kInternal,
                    std::string(kName) + ": " + call + " returned MPI error " +
                        std::to_string(code) + ": " + std::string(text, len));
}

ffi::Error AllToAll(ffi::AnyBuffer x, ffi::AnyBuffer order_in,
                    ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> order_out, int64_t comm_f,
                    int64_t call_id) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return ffi::Error::InvalidArgument(
        std::string(kName) +
        ": MPI is not initialised (or already finalised); import mpi4py.MPI "
        "before the first call");
  }
  const ExchangeGuard guard;
  if (auto err = guard.Check(kName); !err.success()) return err;
  MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_f));
  if (comm == MPI_COMM_NULL) {
    return ffi::Error::InvalidArgument(std::string(kName) +
                                       ": the communicator is MPI_COMM_NULL");
  }
  int size = 0;
  if (int rc = MPI_Comm_size(comm, &size); rc != MPI_SUCCESS) {
    return MpiError("MPI_Comm_size", rc);
  }
  const auto dims = x.dimensions();
  if (dims.size() == 0 || dims[0] != size) {
    return ffi::Error::InvalidArgument(
        std::string(kName) + ": the input's leading dimension must equal the "
        "communicator size " + std::to_string(size) + ", got " +
        (dims.size() ? std::to_string(dims[0]) : std::string("a scalar")));
  }
  if (y->element_type() != x.element_type() ||
      y->size_bytes() != x.size_bytes()) {
    return ffi::Error::InvalidArgument(
        std::string(kName) + ": output must have the input's dtype and size");
  }
  if (order_out->size_bytes() != order_in.size_bytes()) {
    return ffi::Error::InvalidArgument(
        std::string(kName) + ": the order token's output must match its input");
  }
  const size_t per_rank = x.size_bytes() / static_cast<size_t>(size);
  if (per_rank > static_cast<size_t>(INT_MAX)) {
    return ffi::Error::InvalidArgument(
        std::string(kName) + ": " + std::to_string(per_rank) +
        " bytes per rank exceed MPI's int count; split the exchange");
  }
  const int count = static_cast<int>(per_rank);
  if (auto err = CheckSameExchange(kName, comm, call_id); !err.success()) return err;
  if (int rc = MPI_Alltoall(x.untyped_data(), count, MPI_BYTE,
                            y->untyped_data(), count, MPI_BYTE, comm);
      rc != MPI_SUCCESS) {
    return MpiError("MPI_Alltoall", rc);
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
// communicator's Fortran handle (mpi4py: comm.py2f()) as the attribute `comm`, and the
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
