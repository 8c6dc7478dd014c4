// mpi_halo: the neighbour exchange of a halo fill (lax.ppermute's contract), done by MPI.
//
// Every rank of the communicator sends its whole buffer to at most one rank and receives one
// buffer of the same shape from at most one rank: one step of a halo exchange along a mesh
// axis (the face of the lo side goes to the lo neighbour, and so on). The permutation is the
// same on every rank and is passed whole (`dests[r]` / `sources[r]`: where rank r sends to /
// receives from, -1 for nobody), so every process compiles the same program; the handler looks
// up its own entries with MPI_Comm_rank. A rank that receives nothing gets zeros, as with
// lax.ppermute.
//
// Ordering: like mpi_all_to_all.cc, an "order" token is copied from input to output, and the
// Python side threads it through every exchange of a program (and declares the call
// side-effecting), so the exchanges run in the same order on every rank; exchanges of
// separate chains are checked to match across ranks (`call_id`, mpi_common.h) before any send.
//
// Errors (MPI not initialised, a permutation of the wrong length or with out-of-range ranks,
// more than INT_MAX bytes, any MPI error code) are returned as ffi::Error, never fatal; the
// communicator must use MPI_ERRORS_RETURN (mpi4py's default).
#include <mpi.h>

#include <climits>
#include <cstring>
#include <string>

#include "mpi_common.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

constexpr const char* kName = "darray_mpi_sendrecv";
// One tag for every halo message: ordering comes from the token, not from tags.
constexpr int kTag = 7301;

ffi::Error Invalid(const std::string& what) {
  return ffi::Error::InvalidArgument(std::string(kName) + ": " + what);
}

ffi::Error MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  return ffi::Error(ffi::ErrorCode::kInternal,
                    std::string(kName) + ": " + call + " returned MPI error " +
                        std::to_string(code) + ": " + std::string(text, len));
}

// The peer of `rank` in a permutation table, or MPI_PROC_NULL for -1.
ffi::Error Peer(ffi::Span<const int64_t> table, const char* name, int rank,
                int size, int* peer) {
  if (static_cast<int64_t>(table.size()) != size) {
    return Invalid(std::string("the attribute `") + name + "` has " +
                   std::to_string(table.size()) +
                   " entries; expected one per rank of the communicator (" +
                   std::to_string(size) + ")");
  }
  const int64_t value = table[rank];
  if (value < -1 || value >= size) {
    return Invalid(std::string("`") + name + "`[" + std::to_string(rank) + "] = " +
                   std::to_string(value) + " is not a rank of the communicator "
                   "(0.." + std::to_string(size - 1) + ") or -1");
  }
  *peer = value < 0 ? MPI_PROC_NULL : static_cast<int>(value);
  return ffi::Error::Success();
}

ffi::Error SendRecv(ffi::AnyBuffer x, ffi::AnyBuffer order_in,
                    ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> order_out, int64_t comm_f,
                    ffi::Span<const int64_t> dests,
                    ffi::Span<const int64_t> sources, int64_t call_id) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return Invalid("MPI is not initialised (or already finalised); import mpi4py.MPI "
                   "before the first call");
  }
  const ExchangeGuard guard;
  if (auto err = guard.Check(kName); !err.success()) return err;
  MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_f));
  if (comm == MPI_COMM_NULL) return Invalid("the communicator is MPI_COMM_NULL");
  int size = 0, rank = 0;
  if (int rc = MPI_Comm_size(comm, &size); rc != MPI_SUCCESS) {
    return MpiError("MPI_Comm_size", rc);
  }
  if (int rc = MPI_Comm_rank(comm, &rank); rc != MPI_SUCCESS) {
    return MpiError("MPI_Comm_rank", rc);
  }
  int dest = MPI_PROC_NULL, source = MPI_PROC_NULL;
  if (auto err = Peer(dests, "dests", rank, size, &dest); !err.success()) return err;
  if (auto err = Peer(sources, "sources", rank, size, &source); !err.success()) return err;
  if (y->element_type() != x.element_type() || y->size_bytes() != x.size_bytes()) {
    return Invalid("output must have the input's dtype and size");
  }
  if (order_out->size_bytes() != order_in.size_bytes()) {
    return Invalid("the order token's output must match its input");
  }
  const size_t bytes = x.size_bytes();
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return Invalid(std::to_string(bytes) + " bytes exceed MPI's int count; split the face");
  }
  const int count = static_cast<int>(bytes);
  if (auto err = CheckSameExchange(kName, comm, call_id); !err.success()) return err;
  if (source == MPI_PROC_NULL && bytes) {
    std::memset(y->untyped_data(), 0, bytes);  // ppermute: no sender -> zeros
  }
  if (dest == rank && source == rank) {
    if (bytes) std::memcpy(y->untyped_data(), x.untyped_data(), bytes);
  } else if (int rc = MPI_Sendrecv(x.untyped_data(), count, MPI_BYTE, dest, kTag,
                                   y->untyped_data(), count, MPI_BYTE, source, kTag,
                                   comm, MPI_STATUS_IGNORE);
             rc != MPI_SUCCESS) {
    return MpiError("MPI_Sendrecv", rc);
  }
  if (order_in.size_bytes()) {
    std::memcpy(order_out->untyped_data(), order_in.untyped_data(), order_in.size_bytes());
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: data and order token in; received data and the token out; attributes: the
// communicator's Fortran handle (mpi4py: comm.py2f()) as `comm`, and the permutation as
// `dests` / `sources` (int64 arrays with one entry per rank, -1 for none), and the exchange's
// id (see CheckSameExchange in mpi_common.h) as `call_id`.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayMpiSendRecvCpu, darray::SendRecv,
                              xla::ffi::Ffi::Bind()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Arg<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Ret<xla::ffi::AnyBuffer>()
                                  .Attr<int64_t>("comm")
                                  .Attr<xla::ffi::Span<const int64_t>>("dests")
                                  .Attr<xla::ffi::Span<const int64_t>>("sources")
                                  .Attr<int64_t>("call_id"));
