// XLA FFI handlers of darray's "nccl" backend: distributed transposes and halo
// faces on XLA's own NCCL communicator, handed over by the XLA FFI collectives
// extension (xla/ffi/api/collectives_api.h; jaxlib >= 0.11.2). No MPI.
//
// Stages. Prepare: request the communicator (clique) of the call's groups, so
// XLA acquires it before the program runs. Execute: get it, then
//   transpose: pack (one kernel, the exchanged axis made major-most), grouped
//              ncclSend/ncclRecv of one piece per peer, unpack (one kernel);
//   sendrecv:  grouped ncclSend/ncclRecv of one face (a ppermute).
// Groups are flattened device ids (replica * partitions + partition: inside a
// shard_map, the device's position in the mesh), one list per group, each in
// ascending order.
//
// Ranks. darray numbers the blocks of a group along its mesh axes; XLA numbers
// the communicator's ranks its own way. Every call all-gathers each rank's
// block number (an int32 the caller computes with lax.axis_index) so the two
// numberings meet without assuming XLA's order; the host reads the table
// once per (communicator, numbering) and caches it. The all-gather runs on
// every call, so every rank issues the same NCCL calls whatever its cache holds.
//
// NCCL itself is the library XLA loaded (looked up with dlopen(RTLD_NOLOAD)):
// a communicator must be driven by the NCCL that created it, and darray links
// no NCCL of its own. Every failure is returned as an ffi::Error naming the
// call; nothing here aborts the process.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "nccl_common.h"
#include "xla/ffi/api/collectives_api.h"
#include "xla/ffi/api/ffi.h"

namespace darray {
namespace {

namespace ffi = ::xla::ffi;

// The collectives extension as a handler context. Only request/get
// communicator are used, which every 0.x version of the extension has.
struct Collectives
    : ffi::internal::CollectivesExtensionBase<
          ffi::internal::CommunicatorContextBase<ffi::internal::ErrorPolicy>> {
  static bool Support(int32_t major, int32_t minor) {
    return major == XLA_FFI_Extension_Collectives_MajorVersion && minor >= 0;
  }
};
using Comms = Collectives::Type;

// --- the NCCL XLA loaded ------------------------------------------------------
struct NcclApi {
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclCommCount) comm_count = nullptr;
  decltype(&ncclCommUserRank) user_rank = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  bool loaded() const {
    return group_start && group_end && send && recv && all_gather && comm_count &&
           user_rank && error_string;
  }
};

template <typename F>
void Lookup(void* lib, const char* name, F* out) {
  void* p = lib ? dlsym(lib, name) : nullptr;
  if (p == nullptr) p = dlsym(RTLD_DEFAULT, name);
  *out = reinterpret_cast<F>(p);
}

std::mutex nccl_mu;

// Looked up again until found: XLA loads NCCL when it first builds a clique.
ffi::Error Nccl(const char* handler, NcclApi* api) {
  static NcclApi cached;
  std::lock_guard<std::mutex> lock(nccl_mu);
  if (!cached.loaded()) {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    NcclApi a;
    Lookup(lib, "ncclGroupStart", &a.group_start);
    Lookup(lib, "ncclGroupEnd", &a.group_end);
    Lookup(lib, "ncclSend", &a.send);
    Lookup(lib, "ncclRecv", &a.recv);
    Lookup(lib, "ncclAllGather", &a.all_gather);
    Lookup(lib, "ncclCommCount", &a.comm_count);
    Lookup(lib, "ncclCommUserRank", &a.user_rank);
    Lookup(lib, "ncclGetErrorString", &a.error_string);
    if (!a.loaded()) {
      return ffi::Error::Internal(
          std::string(handler) + ": the NCCL library XLA uses is not visible in this process "
          "(libnccl.so.2 is not loaded, or its symbols are hidden); darray's nccl backend "
          "drives XLA's own communicator and needs that library");
    }
    cached = a;
  }
  *api = cached;
  return ffi::Error::Success();
}

ffi::Error NcclFailure(const NcclApi& api, const char* handler, const char* call,
                       ncclResult_t r) {
  return ffi::Error::Internal(std::string(handler) + ": " + call + " returned " +
                              api.error_string(r) + " (" + std::to_string(r) + ")");
}

ffi::Error CudaFailure(const char* handler, const char* what, cudaError_t e) {
  return ffi::Error::Internal(std::string(handler) + ": " + what + ": " + cudaGetErrorName(e) +
                              ": " + cudaGetErrorString(e));
}

// --- groups and communicators --------------------------------------------------
ffi::ErrorOr<std::vector<std::vector<int64_t>>> Groups(const char* handler,
                                                       ffi::Span<const int64_t> flat,
                                                       int64_t size) {
  if (size <= 0 || flat.size() == 0 || flat.size() % size != 0) {
    return ffi::Error::InvalidArgument(
        std::string(handler) + ": groups of " + std::to_string(flat.size()) +
        " ids do not split into groups of group_size=" + std::to_string(size));
  }
  std::vector<std::vector<int64_t>> groups(flat.size() / size);
  for (size_t i = 0; i < flat.size(); ++i) groups[i / size].push_back(flat[i]);
  return groups;
}

ffi::ErrorOr<ncclComm_t> Communicator(const char* handler, Comms& comms,
                                      const std::vector<std::vector<int64_t>>& groups,
                                      int64_t size, const NcclApi& api) {
  auto got = comms.GetCommunicator(ffi::GroupMode::kFlattenedId, groups, 0);
  if (!got.has_value()) {
    return ffi::Error::Internal(std::string(handler) + ": XLA gave no communicator: " +
                                got.error().message());
  }
  auto comm = reinterpret_cast<ncclComm_t>(got.value());
  int count = 0;
  if (ncclResult_t r = api.comm_count(comm, &count); r != ncclSuccess) {
    return NcclFailure(api, handler, "ncclCommCount", r);
  }
  if (count != size) {
    return ffi::Error::Internal(std::string(handler) + ": XLA's communicator has " +
                                std::to_string(count) + " ranks; the group has " +
                                std::to_string(size));
  }
  return comm;
}

// Which block each rank holds, and the reverse (see "Ranks" above).
struct RankMap {
  std::vector<int> block_of_rank, rank_of_block;
  int my_rank = 0;
};

std::mutex ranks_mu;
std::map<std::pair<void*, int64_t>, RankMap>& RankCache() {
  static auto* cache = new std::map<std::pair<void*, int64_t>, RankMap>();
  return *cache;
}

ffi::Error Ranks(const char* handler, const NcclApi& api, ncclComm_t comm, int64_t size,
                 int64_t order_key, const int32_t* my_block, int32_t* gathered,
                 cudaStream_t stream, RankMap* out) {
  if (ncclResult_t r = api.all_gather(my_block, gathered, 1, ncclInt32, comm, stream);
      r != ncclSuccess) {
    return NcclFailure(api, handler, "ncclAllGather", r);
  }
  const auto key = std::make_pair(static_cast<void*>(comm), order_key);
  {
    std::lock_guard<std::mutex> lock(ranks_mu);
    auto it = RankCache().find(key);
    if (it != RankCache().end()) {
      *out = it->second;
      return ffi::Error::Success();
    }
  }
  RankMap m;
  m.block_of_rank.resize(size);
  m.rank_of_block.assign(size, -1);
  if (cudaError_t e = cudaMemcpyAsync(m.block_of_rank.data(), gathered, size * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, stream);
      e != cudaSuccess) {
    return CudaFailure(handler, "cudaMemcpyAsync of the rank table", e);
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return CudaFailure(handler, "cudaStreamSynchronize after the rank table", e);
  }
  for (int r = 0; r < size; ++r) {
    const int b = m.block_of_rank[r];
    if (b < 0 || b >= size || m.rank_of_block[b] != -1) {
      return ffi::Error::Internal(std::string(handler) +
                                  ": the ranks' block numbers are not a permutation of 0.." +
                                  std::to_string(size - 1) + " (rank " + std::to_string(r) +
                                  " holds " + std::to_string(b) + ")");
    }
    m.rank_of_block[b] = r;
  }
  if (ncclResult_t r = api.user_rank(comm, &m.my_rank); r != ncclSuccess) {
    return NcclFailure(api, handler, "ncclCommUserRank", r);
  }
  std::lock_guard<std::mutex> lock(ranks_mu);
  RankCache()[key] = m;
  *out = m;
  return ffi::Error::Success();
}

// --- prepare: ask XLA for the clique ---------------------------------------------
ffi::Error Prepare(Comms comms, ffi::Dictionary attrs) {
  const char* handler = "darray_nccl (prepare)";
  auto flat = attrs.get<ffi::Span<const int64_t>>("groups");
  auto size = attrs.get<int64_t>("group_size");
  if (!flat.has_value() || !size.has_value()) {
    return ffi::Error::InvalidArgument(std::string(handler) +
                                       ": the call has no `groups` / `group_size` attributes");
  }
  auto groups = Groups(handler, flat.value(), size.value());
  if (!groups.has_value()) return groups.error();
  return comms.RequestCommunicator(ffi::GroupMode::kFlattenedId, groups.value(), 0);
}

// --- transpose ---------------------------------------------------------------------
ffi::ErrorOr<CopyDesc> Desc(const char* handler, const char* which,
                            ffi::Span<const int64_t> dims, ffi::Span<const int64_t> strides,
                            ffi::Span<const int64_t> checks) {
  CopyDesc d;
  if (dims.size() == 0 || dims.size() > kMaxCopyDims || strides.size() != dims.size() ||
      checks.size() % 3 != 0 || checks.size() / 3 > kMaxCopyChecks) {
    return ffi::Error::InvalidArgument(std::string(handler) + ": malformed " + which +
                                       " descriptor");
  }
  d.ndims = static_cast<int32_t>(dims.size());
  d.total = 1;
  for (int k = 0; k < d.ndims; ++k) {
    d.len[k] = dims[k];
    d.stride[k] = strides[k];
    d.total *= dims[k];
  }
  d.nchecks = static_cast<int32_t>(checks.size() / 3);
  for (int c = 0; c < d.nchecks; ++c) {
    d.check_digit[c] = static_cast<int32_t>(checks[3 * c]);
    d.check_chunk[c] = static_cast<int32_t>(checks[3 * c + 1]);
    d.check_limit[c] = checks[3 * c + 2];
    if (d.check_digit[c] < 0 || d.check_digit[c] >= d.ndims || d.check_chunk[c] < 0 ||
        d.check_chunk[c] >= d.ndims) {
      return ffi::Error::InvalidArgument(std::string(handler) + ": malformed " + which +
                                         " check");
    }
  }
  return d;
}

constexpr const char* kTranspose = "darray_nccl_transpose";

ffi::Error Transpose(cudaStream_t stream, Comms comms, ffi::AnyBuffer x,
                     ffi::Buffer<ffi::S32> my_block, ffi::Result<ffi::AnyBuffer> y,
                     ffi::Result<ffi::AnyBuffer> send_work, ffi::Result<ffi::AnyBuffer> recv,
                     ffi::Result<ffi::Buffer<ffi::S32>> gathered,
                     ffi::Span<const int64_t> groups_flat, int64_t group_size,
                     ffi::Span<const int64_t> pack_dims, ffi::Span<const int64_t> pack_strides,
                     ffi::Span<const int64_t> pack_checks, ffi::Span<const int64_t> unpack_dims,
                     ffi::Span<const int64_t> unpack_strides,
                     ffi::Span<const int64_t> unpack_checks, int64_t order_key) {
  if (x.element_type() != y->element_type() || x.element_count() == 0 ||
      recv->element_type() != x.element_type()) {
    return ffi::Error::InvalidArgument(std::string(kTranspose) +
                                       ": x, y and the receive buffer must share one dtype");
  }
  const int64_t eb = static_cast<int64_t>(x.size_bytes() / x.element_count());
  auto pack = Desc(kTranspose, "pack", pack_dims, pack_strides, pack_checks);
  if (!pack.has_value()) return pack.error();
  auto unpack = Desc(kTranspose, "unpack", unpack_dims, unpack_strides, unpack_checks);
  if (!unpack.has_value()) return unpack.error();
  const int64_t elems = pack.value().total;
  if (unpack.value().total != elems || elems % group_size != 0 ||
      static_cast<int64_t>(recv->element_count()) != elems ||
      gathered->element_count() != static_cast<size_t>(group_size)) {
    return ffi::Error::InvalidArgument(
        std::string(kTranspose) + ": pack (" + std::to_string(elems) + ") and unpack (" +
        std::to_string(unpack.value().total) + ") sizes, the receive buffer (" +
        std::to_string(recv->element_count()) + ") and the group (" +
        std::to_string(group_size) + ") do not agree");
  }
  const size_t bytes = static_cast<size_t>(elems * eb);
  // The send buffer: its own workspace, or y when y is at least as large (Python then
  // declares a 1-byte workspace): y is written only by the unpack, after the exchange.
  void* send = send_work->size_bytes() >= bytes ? send_work->untyped_data()
               : y->size_bytes() >= bytes       ? y->untyped_data()
                                                : nullptr;
  if (send == nullptr) {
    return ffi::Error::InvalidArgument(std::string(kTranspose) + ": no buffer of " +
                                       std::to_string(bytes) + " bytes to pack into");
  }
  NcclApi api;
  if (auto e = Nccl(kTranspose, &api); e.failure()) return e;
  auto groups = Groups(kTranspose, groups_flat, group_size);
  if (!groups.has_value()) return groups.error();
  auto comm = Communicator(kTranspose, comms, groups.value(), group_size, api);
  if (!comm.has_value()) return comm.error();
  RankMap ranks;
  if (auto e = Ranks(kTranspose, api, comm.value(), group_size, order_key,
                     my_block.typed_data(), gathered->typed_data(), stream, &ranks);
      e.failure()) {
    return e;
  }
  if (cudaError_t e = LaunchStridedCopy(pack.value(), true, eb, x.untyped_data(), send, stream);
      e != cudaSuccess) {
    return CudaFailure(kTranspose, "the pack kernel", e);
  }
  const size_t piece = bytes / static_cast<size_t>(group_size);
  auto* send_bytes = static_cast<char*>(send);
  auto* recv_bytes = static_cast<char*>(recv->untyped_data());
  if (ncclResult_t r = api.group_start(); r != ncclSuccess) {
    return NcclFailure(api, kTranspose, "ncclGroupStart", r);
  }
  // Piece b of the send buffer is block b's; piece b of the receive buffer comes from it.
  for (int64_t b = 0; b < group_size; ++b) {
    const int peer = ranks.rank_of_block[b];
    ncclResult_t r = api.send(send_bytes + b * piece, piece, ncclInt8, peer, comm.value(),
                              stream);
    if (r == ncclSuccess) {
      r = api.recv(recv_bytes + b * piece, piece, ncclInt8, peer, comm.value(), stream);
    }
    if (r != ncclSuccess) {
      api.group_end();
      return NcclFailure(api, kTranspose, "ncclSend/ncclRecv", r);
    }
  }
  if (ncclResult_t r = api.group_end(); r != ncclSuccess) {
    return NcclFailure(api, kTranspose, "ncclGroupEnd", r);
  }
  if (cudaError_t e = LaunchStridedCopy(unpack.value(), false, eb, recv->untyped_data(),
                                        y->untyped_data(), stream);
      e != cudaSuccess) {
    return CudaFailure(kTranspose, "the unpack kernel", e);
  }
  return ffi::Error::Success();
}

// --- sendrecv (halo faces) -----------------------------------------------------------
constexpr const char* kSendRecv = "darray_nccl_sendrecv";

ffi::Error SendRecv(cudaStream_t stream, Comms comms, ffi::AnyBuffer x,
                    ffi::Buffer<ffi::S32> my_block, ffi::Result<ffi::AnyBuffer> y,
                    ffi::Result<ffi::Buffer<ffi::S32>> gathered,
                    ffi::Span<const int64_t> groups_flat, int64_t group_size,
                    ffi::Span<const int64_t> sources, ffi::Span<const int64_t> dests,
                    int64_t order_key) {
  if (x.element_type() != y->element_type() || x.size_bytes() != y->size_bytes() ||
      sources.size() != static_cast<size_t>(group_size) ||
      dests.size() != static_cast<size_t>(group_size) ||
      gathered->element_count() != static_cast<size_t>(group_size)) {
    return ffi::Error::InvalidArgument(
        std::string(kSendRecv) + ": x and y must match, and sources/dests must hold one entry "
        "per block of the group");
  }
  NcclApi api;
  if (auto e = Nccl(kSendRecv, &api); e.failure()) return e;
  auto groups = Groups(kSendRecv, groups_flat, group_size);
  if (!groups.has_value()) return groups.error();
  auto comm = Communicator(kSendRecv, comms, groups.value(), group_size, api);
  if (!comm.has_value()) return comm.error();
  RankMap ranks;
  if (auto e = Ranks(kSendRecv, api, comm.value(), group_size, order_key,
                     my_block.typed_data(), gathered->typed_data(), stream, &ranks);
      e.failure()) {
    return e;
  }
  const int mine = ranks.block_of_rank[ranks.my_rank];
  const int64_t to = dests[mine], from = sources[mine];
  if (to >= group_size || from >= group_size) {
    return ffi::Error::InvalidArgument(std::string(kSendRecv) + ": a peer outside the group");
  }
  if (from < 0) {  // nothing arrives here: zeros, as lax.ppermute
    if (cudaError_t e = cudaMemsetAsync(y->untyped_data(), 0, y->size_bytes(), stream);
        e != cudaSuccess) {
      return CudaFailure(kSendRecv, "cudaMemsetAsync", e);
    }
  }
  if (ncclResult_t r = api.group_start(); r != ncclSuccess) {
    return NcclFailure(api, kSendRecv, "ncclGroupStart", r);
  }
  ncclResult_t r = ncclSuccess;
  if (to >= 0) {
    r = api.send(x.untyped_data(), x.size_bytes(), ncclInt8, ranks.rank_of_block[to],
                 comm.value(), stream);
  }
  if (r == ncclSuccess && from >= 0) {
    r = api.recv(y->untyped_data(), y->size_bytes(), ncclInt8, ranks.rank_of_block[from],
                 comm.value(), stream);
  }
  ncclResult_t end = api.group_end();
  if (r != ncclSuccess) return NcclFailure(api, kSendRecv, "ncclSend/ncclRecv", r);
  if (end != ncclSuccess) return NcclFailure(api, kSendRecv, "ncclGroupEnd", end);
  return ffi::Error::Success();
}

}  // namespace
}  // namespace darray

namespace ffi = ::xla::ffi;

// Prepare stage of both targets: request the clique of the call's groups.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayNcclPrepareCuda, darray::Prepare,
                              ffi::Ffi::BindPrepare()
                                  .Ctx<ffi::Extension<darray::Collectives>>()
                                  .Attrs());

// Execute stage of the transpose: x, my block number -> y, send and receive buffers (XLA
// temporaries), the rank table.
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayNcclTransposeCuda, darray::Transpose,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::Extension<darray::Collectives>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Attr<ffi::Span<const int64_t>>("groups")
                                  .Attr<int64_t>("group_size")
                                  .Attr<ffi::Span<const int64_t>>("pack_dims")
                                  .Attr<ffi::Span<const int64_t>>("pack_strides")
                                  .Attr<ffi::Span<const int64_t>>("pack_checks")
                                  .Attr<ffi::Span<const int64_t>>("unpack_dims")
                                  .Attr<ffi::Span<const int64_t>>("unpack_strides")
                                  .Attr<ffi::Span<const int64_t>>("unpack_checks")
                                  .Attr<int64_t>("order_key"));

// Execute stage of the face exchange (a ppermute over the group).
XLA_FFI_DEFINE_HANDLER_SYMBOL(DarrayNcclSendRecvCuda, darray::SendRecv,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::Extension<darray::Collectives>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Attr<ffi::Span<const int64_t>>("groups")
                                  .Attr<int64_t>("group_size")
                                  .Attr<ffi::Span<const int64_t>>("sources")
                                  .Attr<ffi::Span<const int64_t>>("dests")
                                  .Attr<int64_t>("order_key"));
