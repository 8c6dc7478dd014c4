// mpi_api.cc: binding the MPI calls of mpi_api.h at run time (see there for why).
#include "mpi_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

namespace darray::mpi {
namespace {

struct Table {
  int handle_bytes = 0;
  Constants constants;
  void* initialized = nullptr;
  void* finalized = nullptr;
  void* comm_size = nullptr;
  void* comm_rank = nullptr;
  void* allreduce = nullptr;
  void* alltoall = nullptr;
  void* sendrecv = nullptr;
  void* error_string = nullptr;
  void* library_version = nullptr;
};

Table table;
std::atomic<bool> bound{false};
std::mutex bind_mutex;

// A handle converted to the library's own handle type H (int or a pointer).
template <typename H>
H As(Handle h) {
  if constexpr (std::is_pointer_v<H>) {
    return reinterpret_cast<H>(static_cast<intptr_t>(h));
  } else {
    return static_cast<H>(h);  // MPICH handles are 32-bit patterns; mpi4py may report them
                               // unsigned, the low 32 bits are the handle either way
  }
}

template <typename H>
int CommSizeAs(Handle comm, int* size) {
  return reinterpret_cast<int (*)(H, int*)>(table.comm_size)(As<H>(comm), size);
}

template <typename H>
int CommRankAs(Handle comm, int* rank) {
  return reinterpret_cast<int (*)(H, int*)>(table.comm_rank)(As<H>(comm), rank);
}

template <typename H>
int AllreduceAs(const void* send, void* recv, int count, Handle type, Handle op, Handle comm) {
  using Fn = int (*)(const void*, void*, int, H, H, H);
  return reinterpret_cast<Fn>(table.allreduce)(send, recv, count, As<H>(type), As<H>(op),
                                               As<H>(comm));
}

template <typename H>
int AlltoallAs(const void* send, int send_count, Handle send_type, void* recv, int recv_count,
               Handle recv_type, Handle comm) {
  using Fn = int (*)(const void*, int, H, void*, int, H, H);
  return reinterpret_cast<Fn>(table.alltoall)(send, send_count, As<H>(send_type), recv,
                                              recv_count, As<H>(recv_type), As<H>(comm));
}

template <typename H>
int SendrecvAs(const void* send, int send_count, Handle send_type, int dest, int send_tag,
               void* recv, int recv_count, Handle recv_type, int source, int recv_tag,
               Handle comm) {
  // A real status buffer instead of MPI_STATUS_IGNORE, whose value differs between ABIs;
  // 256 bytes exceed every MPI_Status layout (MPICH 20, Open MPI 24, MPI 5 ABI 32 bytes).
  alignas(16) unsigned char status[256];
  using Fn = int (*)(const void*, int, H, int, int, void*, int, H, int, int, H, void*);
  return reinterpret_cast<Fn>(table.sendrecv)(send, send_count, As<H>(send_type), dest,
                                              send_tag, recv, recv_count, As<H>(recv_type),
                                              source, recv_tag, As<H>(comm), status);
}

bool Narrow() { return table.handle_bytes == 4; }

}  // namespace

std::string Bind(const std::string& module_path, int handle_bytes, const Constants& constants) {
  if (handle_bytes != 4 && handle_bytes != 8) {
    return "sizeof(MPI_Comm) = " + std::to_string(handle_bytes) +
           " is neither an int handle (4) nor a pointer handle (8)";
  }
  // RTLD_NOLOAD: only an already loaded module; dlsym on its handle also searches the
  // libraries it depends on, i.e. the libmpi that mpi4py itself calls.
  void* lib = dlopen(module_path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) {
    const char* why = dlerror();
    return "mpi4py's MPI module " + module_path + " is not loaded in this process (" +
           (why ? why : "dlopen failed") + ")";
  }
  Table found;
  found.handle_bytes = handle_bytes;
  found.constants = constants;
  const struct {
    const char* name;
    void** slot;
  } wanted[] = {
      {"MPI_Initialized", &found.initialized},   {"MPI_Finalized", &found.finalized},
      {"MPI_Comm_size", &found.comm_size},       {"MPI_Comm_rank", &found.comm_rank},
      {"MPI_Allreduce", &found.allreduce},       {"MPI_Alltoall", &found.alltoall},
      {"MPI_Sendrecv", &found.sendrecv},         {"MPI_Error_string", &found.error_string},
      {"MPI_Get_library_version", &found.library_version},
  };
  std::string missing;
  for (const auto& w : wanted) {
    *w.slot = dlsym(lib, w.name);
    if (*w.slot == nullptr) missing += std::string(missing.empty() ? "" : ", ") + w.name;
  }
  dlclose(lib);  // balances our dlopen; mpi4py keeps the library loaded
  if (!missing.empty()) {
    return "the MPI library loaded by " + module_path + " does not define " + missing;
  }
  std::lock_guard<std::mutex> lock(bind_mutex);
  table = found;
  bound.store(true);
  return "";
}

bool Bound() { return bound.load(); }
const Constants& Consts() { return table.constants; }

int Initialized(int* flag) {
  return reinterpret_cast<int (*)(int*)>(table.initialized)(flag);
}

int Finalized(int* flag) { return reinterpret_cast<int (*)(int*)>(table.finalized)(flag); }

int CommSize(Handle comm, int* size) {
  return Narrow() ? CommSizeAs<int>(comm, size) : CommSizeAs<void*>(comm, size);
}

int CommRank(Handle comm, int* rank) {
  return Narrow() ? CommRankAs<int>(comm, rank) : CommRankAs<void*>(comm, rank);
}

int Allreduce(const void* send, void* recv, int count, Handle type, Handle op, Handle comm) {
  return Narrow() ? AllreduceAs<int>(send, recv, count, type, op, comm)
                  : AllreduceAs<void*>(send, recv, count, type, op, comm);
}

int Alltoall(const void* send, int send_count, Handle send_type, void* recv, int recv_count,
             Handle recv_type, Handle comm) {
  return Narrow() ? AlltoallAs<int>(send, send_count, send_type, recv, recv_count, recv_type,
                                    comm)
                  : AlltoallAs<void*>(send, send_count, send_type, recv, recv_count,
                                      recv_type, comm);
}

int Sendrecv(const void* send, int send_count, Handle send_type, int dest, int send_tag,
             void* recv, int recv_count, Handle recv_type, int source, int recv_tag,
             Handle comm) {
  return Narrow() ? SendrecvAs<int>(send, send_count, send_type, dest, send_tag, recv,
                                    recv_count, recv_type, source, recv_tag, comm)
                  : SendrecvAs<void*>(send, send_count, send_type, dest, send_tag, recv,
                                      recv_count, recv_type, source, recv_tag, comm);
}

std::string ErrorString(int code) {
  // 8192 bytes exceed MPI_MAX_ERROR_STRING of every MPI (MPICH 1024, Open MPI 256).
  char text[8192];
  int len = 0;
  using Fn = int (*)(int, char*, int*);
  if (!Bound() || reinterpret_cast<Fn>(table.error_string)(code, text, &len) != 0) return "";
  return std::string(text, len);
}

std::string LibraryVersion() {
  // MPI_MAX_LIBRARY_VERSION_STRING: MPICH 8192, Open MPI 256.
  std::string text(16384, '\0');
  int len = 0;
  using Fn = int (*)(char*, int*);
  if (!Bound() || reinterpret_cast<Fn>(table.library_version)(text.data(), &len) != 0) {
    return "";
  }
  text.resize(len);
  return text;
}

}  // namespace darray::mpi
