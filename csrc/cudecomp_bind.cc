// Python bindings for the collective half of the cuDecomp backend: creating the
// library handle and grid descriptors (collective over an MPI communicator,
// called once per key from darray/_src/backends/cudecomp.py), and reading the
// pencil shapes and workspace sizes the FFI handlers need. Handles and
// descriptors cross into Python as integers (their addresses) and come back to
// the handlers as FFI attributes.
//
// Every failure raises RuntimeError naming the cuDecomp call and its result
// code; nothing here aborts the process.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>

#include "cudecomp_common.h"

namespace nb = nanobind;

namespace darray {
namespace {

void Check(const char* call, cudecompResult_t r) {
  if (r != CUDECOMP_RESULT_SUCCESS) throw std::runtime_error(CudecompFailure(call, r));
}

cudecompHandle_t AsHandle(int64_t addr) {
  if (addr == 0) throw std::invalid_argument("cuDecomp handle is null");
  return reinterpret_cast<cudecompHandle_t>(addr);
}

cudecompGridDesc_t AsGrid(int64_t addr) {
  if (addr == 0) throw std::invalid_argument("cuDecomp grid descriptor is null");
  return reinterpret_cast<cudecompGridDesc_t>(addr);
}

int64_t Init(int64_t comm_f) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    throw std::runtime_error(
        "cudecompInit: MPI is not initialised; import mpi4py.MPI before using the cuDecomp "
        "backend");
  }
  MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_f));
  cudecompHandle_t handle = nullptr;
  Check("cudecompInit", cudecompInit(&handle, comm));
  return reinterpret_cast<int64_t>(handle);
}

void Finalize(int64_t handle) { Check("cudecompFinalize", cudecompFinalize(AsHandle(handle))); }

// gdims and axis_contiguous in cuDecomp's order (X fastest); pdims = (rows, cols).
int64_t GridCreate(int64_t handle, std::array<int32_t, 3> gdims, std::array<int32_t, 2> pdims,
                   int32_t transpose_comm, int32_t halo_comm, int32_t rank_order,
                   std::array<bool, 3> axis_contiguous) {
  cudecompGridDescConfig_t config;
  Check("cudecompGridDescConfigSetDefaults", cudecompGridDescConfigSetDefaults(&config));
  for (int i = 0; i < 3; ++i) {
    config.gdims[i] = gdims[i];
    config.transpose_axis_contiguous[i] = axis_contiguous[i];
  }
  config.pdims[0] = pdims[0];
  config.pdims[1] = pdims[1];
  config.transpose_comm_backend = static_cast<cudecompTransposeCommBackend_t>(transpose_comm);
  config.halo_comm_backend = static_cast<cudecompHaloCommBackend_t>(halo_comm);
  config.rank_order = static_cast<cudecompRankOrder_t>(rank_order);
  cudecompGridDesc_t grid = nullptr;
  Check("cudecompGridDescCreate",
        cudecompGridDescCreate(AsHandle(handle), &grid, &config, nullptr));
  return reinterpret_cast<int64_t>(grid);
}

void GridDestroy(int64_t handle, int64_t grid) {
  Check("cudecompGridDescDestroy", cudecompGridDescDestroy(AsHandle(handle), AsGrid(grid)));
}

// The pencil of `axis` (0 X, 1 Y, 2 Z) with the given halo extents: its local
// shape, bounds and memory order (all in cuDecomp's order) and element count.
nb::dict PencilInfo(int64_t handle, int64_t grid, int32_t axis, std::array<int32_t, 3> halo) {
  cudecompPencilInfo_t info;
  Check("cudecompGetPencilInfo", cudecompGetPencilInfo(AsHandle(handle), AsGrid(grid), &info,
                                                       axis, halo.data(), nullptr));
  nb::dict d;
  d["shape"] = nb::make_tuple(info.shape[0], info.shape[1], info.shape[2]);
  d["lo"] = nb::make_tuple(info.lo[0], info.lo[1], info.lo[2]);
  d["hi"] = nb::make_tuple(info.hi[0], info.hi[1], info.hi[2]);
  d["order"] = nb::make_tuple(info.order[0], info.order[1], info.order[2]);
  d["size"] = info.size;
  return d;
}

int64_t TransposeWorkspace(int64_t handle, int64_t grid) {
  int64_t n = 0;
  Check("cudecompGetTransposeWorkspaceSize",
        cudecompGetTransposeWorkspaceSize(AsHandle(handle), AsGrid(grid), &n));
  return n;
}

int64_t HaloWorkspace(int64_t handle, int64_t grid, int32_t axis, std::array<int32_t, 3> halo) {
  int64_t n = 0;
  Check("cudecompGetHaloWorkspaceSize",
        cudecompGetHaloWorkspaceSize(AsHandle(handle), AsGrid(grid), axis, halo.data(), &n));
  return n;
}

}  // namespace

void BindCudecomp(nb::module_& m) {
  m.def("cudecomp_init", &Init, nb::arg("comm_f"),
        "cudecompInit over the MPI communicator with Fortran handle comm_f; returns the "
        "handle's address. Collective over the communicator.");
  m.def("cudecomp_finalize", &Finalize, nb::arg("handle"));
  m.def("cudecomp_grid_create", &GridCreate, nb::arg("handle"), nb::arg("gdims"),
        nb::arg("pdims"), nb::arg("transpose_comm"), nb::arg("halo_comm"),
        nb::arg("rank_order"), nb::arg("axis_contiguous"),
        "cudecompGridDescCreate (collective); gdims in cuDecomp's order. Returns the address.");
  m.def("cudecomp_grid_destroy", &GridDestroy, nb::arg("handle"), nb::arg("grid"));
  m.def("cudecomp_pencil_info", &PencilInfo, nb::arg("handle"), nb::arg("grid"),
        nb::arg("axis"), nb::arg("halo"));
  m.def("cudecomp_transpose_workspace", &TransposeWorkspace, nb::arg("handle"),
        nb::arg("grid"), "Transpose workspace size in elements (of the dtype used).");
  m.def("cudecomp_halo_workspace", &HaloWorkspace, nb::arg("handle"), nb::arg("grid"),
        nb::arg("axis"), nb::arg("halo"), "Halo workspace size in elements.");
  m.attr("CUDECOMP_VERSION") = std::to_string(CUDECOMP_MAJOR) + "." +
                               std::to_string(CUDECOMP_MINOR) + "." +
                               std::to_string(CUDECOMP_PATCH);
}

}  // namespace darray
