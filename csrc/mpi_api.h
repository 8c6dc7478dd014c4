// mpi_api.h: the few MPI calls the handlers make, resolved at run time from the MPI library
// that mpi4py loaded into the process.
//
// Why not link MPI at build time: a wheel linked against one MPI depends on it (a plain
// `pip install darray` would need an MPI library), and finding MPI at build time depends on the
// user's PATH (the mpich wheel's compiler wrappers live in the venv's bin/). Resolving the calls
// with dlsym from the library mpi4py already loaded, as MPItrampoline and the MPI 5 standard ABI
// do, lets one build serve every case: no MPI needed to build or import darray, and under
// mpiexec the handlers use exactly the MPI that mpi4py initialised.
//
// What differs between MPI ABIs is the width of handles (MPI_Comm, MPI_Datatype, MPI_Op): an
// int in MPICH's ABI, a pointer in Open MPI's and the MPI 5 standard ABI. The handles
// themselves (and MPI_PROC_NULL) come from mpi4py (MPI._handleof), never from a header, and
// each call goes through a function pointer of the right width. MPI_SUCCESS is 0 in every ABI.
#pragma once

#include <cstdint>
#include <string>

namespace darray::mpi {

// An MPI handle as mpi4py reports it; narrowed to an int for MPICH-ABI libraries.
using Handle = int64_t;

struct Constants {
  Handle byte = 0;     // MPI_BYTE
  Handle int64 = 0;    // MPI_INT64_T
  Handle op_max = 0;   // MPI_MAX
  int proc_null = -1;  // MPI_PROC_NULL
};

// Resolves the MPI calls from the library that `module_path` (mpi4py's MPI extension module,
// already loaded) depends on. `handle_bytes` is sizeof(MPI_Comm) of that library (4 or 8).
// Returns "" on success, else why it failed; binding again rebinds (same library, same result).
std::string Bind(const std::string& module_path, int handle_bytes, const Constants& constants);

// True once Bind succeeded.
bool Bound();
const Constants& Consts();

// The MPI calls, with MPI's return codes. Only valid once Bound().
int Initialized(int* flag);
int Finalized(int* flag);
int CommSize(Handle comm, int* size);
int CommRank(Handle comm, int* rank);
int Allreduce(const void* send, void* recv, int count, Handle type, Handle op, Handle comm);
int Alltoall(const void* send, int send_count, Handle send_type, void* recv, int recv_count,
             Handle recv_type, Handle comm);
// MPI_Sendrecv with the status ignored.
int Sendrecv(const void* send, int send_count, Handle send_type, int dest, int send_tag,
             void* recv, int recv_count, Handle recv_type, int source, int recv_tag, Handle comm);
// MPI_Error_string's text for `code` ("" when MPI cannot say).
std::string ErrorString(int code);
// MPI_Get_library_version's text ("" when MPI cannot say).
std::string LibraryVersion();

}  // namespace darray::mpi
