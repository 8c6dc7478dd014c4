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
// communicator must use MPI_ERRORS_RETURN (mpi4py's default). MPI is called through mpi_api.h.
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

// The peer of `rank` in a permutation table, or MPI_PROC_NULL for -1.
ffi::Error Peer(ffi::Span<const int64_t> table, const char* name, int rank,
                int size, int* peer) {
  if (static_cast<int64_t>(table.size()) != size) {
    return Invalid(kName, std::string("the attribute `") + name + "` has " +
                              std::to_string(table.size()) +
                              " entries; expected one per rank of the communicator (" +
                              std::to_string(size) + ")");
  }
  const int64_t value = table[rank];
  if (value < -1 || value >= size) {
    return Invalid(kName, std::string("`") + name + "`[" + std::to_string(rank) + "] = " +
                              std::to_string(value) + " is not a rank of the communicator "
                              "(0.." + std::to_string(size - 1) + ") or -1");
  }
  *peer = value < 0 ? mpi::Consts().proc_null : static_cast<int>(value);
  return ffi::Error::Success();
}

ffi::Error SendRecv(ffi::AnyBuffer x, ffi::AnyBuffer order_in,
                    ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::AnyBuffer> order_out, int64_t comm,
                    ffi::Span<const int64_t> dests,
                    ffi::Span<const int64_t> sources, int64_t call_id) {
  if (auto err = CheckMpiReady(kName); !err.success()) return err;
  const ExchangeGuard guard;
  if (auto err = guard.Check(kName); !err.success()) return err;
  int size = 0, rank = 0;
  if (int rc = mpi::CommSize(comm, &size); rc != 0) return MpiError(kName, "MPI_Comm_size", rc);
  if (int rc = mpi::CommRank(comm, &rank); rc != 0) return MpiError(kName, "MPI_Comm_rank", rc);
  const int nobody = mpi::Consts().proc_null;
  int dest = nobody, source = nobody;
  if (auto err = Peer(dests, "dests", rank, size, &dest); !err.success()) return err;
  if (auto err = Peer(sources, "sources", rank, size, &source); !err.success()) return err;
  if (auto err = CheckOutputs(kName, x, order_in, y, order_out); !err.success()) return err;
  const size_t bytes = x.size_bytes();
  int count = 0;
  if (auto err = CheckCount(kName, bytes, "bytes", "split the face", &count); !err.success()) {
    return err;
  }
  if (auto err = CheckSameExchange(kName, comm, call_id); !err.success()) return err;
  if (source == nobody && bytes) {
    std::memset(y->untyped_data(), 0, bytes);  // ppermute: no sender -> zeros
  }
  const mpi::Handle byte = mpi::Consts().byte;
  if (dest == rank && source == rank) {
    if (bytes) std::memcpy(y->untyped_data(), x.untyped_data(), bytes);
  } else if (int rc = mpi::Sendrecv(x.untyped_data(), count, byte, dest, kTag,
                                    y->untyped_data(), count, byte, source, kTag, comm);
             rc != 0) {
    return MpiError(kName, "MPI_Sendrecv", rc);
  }
  if (order_in.size_bytes()) {
    std::memcpy(order_out->untyped_data(), order_in.untyped_data(), order_in.size_bytes());
  }
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

// Binding: data and order token in; received data and the token out; attributes: the
// communicator's C handle (mpi4py: MPI._handleof(comm)) as `comm`, and the permutation as
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
