// darray._native: the nanobind module that hands XLA FFI handlers to Python.
//
// Python (darray/_src/base/native.py) registers each capsule with
// jax.ffi.register_ffi_target under its key; the key's suffix (_cpu, _cuda)
// names the platform. Nothing here runs a computation: it only exports
// function pointers and a description of what was compiled in.
#include <string>
#include <type_traits>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "fftw_provider.h"
#include "pad_axis.h"
#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayPermuteCpu);
// Defined in fftw_cpu.cc: the local FFT on FFTW, loaded at run time (fftw_provider.h).
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayFftwCpu);

#ifdef DARRAY_HAS_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef DARRAY_HAS_CUDECOMP
#include <cudecomp_version.h>
// Defined in cudecomp_ffi.cc and cudecomp_bind.cc (DARRAY_ENABLE_CUDECOMP=ON).
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayCudecompTransposeCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayCudecompHaloCuda);
namespace darray {
void BindCudecomp(nanobind::module_& m);
}
#endif
#ifdef DARRAY_HAS_NCCL
#include <nccl.h>

#include "xla/ffi/api/collectives_c_api.h"
// Defined in nccl_ffi.cc (DARRAY_ENABLE_NCCL=ON): one prepare handler (requests XLA's
// communicator) shared by both targets, and their execute handlers.
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayNcclPrepareCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayNcclTransposeCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayNcclSendRecvCuda);
#endif
#ifdef DARRAY_HAS_MPI
#include "mpi_api.h"
// Defined in mpi_all_to_all.cc (compiled unless DARRAY_ENABLE_MPI=OFF; no MPI is needed to
// build them: MPI is resolved at run time, see mpi_api.h).
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayMpiAllToAllCpu);
// Defined in mpi_halo.cc (likewise).
XLA_FFI_DECLARE_HANDLER_SYMBOL(DarrayMpiSendRecvCpu);
#endif

namespace nb = nanobind;

namespace {

// Wraps a handler symbol in an unnamed PyCapsule, the form register_ffi_target
// expects; the static_assert rejects anything that is not an FFI handler.
template <typename Fn>
nb::capsule EncapsulateHandler(Fn* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, Fn, XLA_FFI_CallFrame*>,
                "an XLA FFI handler must take XLA_FFI_CallFrame* and return XLA_FFI_Error*");
  return nb::capsule(reinterpret_cast<void*>(fn));
}

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "darray native part: XLA FFI handlers exported as PyCapsules.";
#ifdef DARRAY_HAS_CUDECOMP
  darray::BindCudecomp(m);
#endif
#ifdef DARRAY_HAS_MPI
  // mpi_bind(module_path, handle_bytes, byte, int64, op_max, proc_null) -> "" or why not.
  // Python (darray/_src/backends/mpi_transport.py) passes mpi4py's MPI module file and the
  // handles mpi4py reports (MPI._sizeof(MPI.Comm), MPI._handleof(MPI.BYTE), ...).
  m.def(
      "mpi_bind",
      [](const std::string& module_path, int handle_bytes, int64_t byte, int64_t int64,
         int64_t op_max, int proc_null) {
        darray::mpi::Constants constants;
        constants.byte = byte;
        constants.int64 = int64;
        constants.op_max = op_max;
        constants.proc_null = proc_null;
        return darray::mpi::Bind(module_path, handle_bytes, constants);
      },
      "Resolve the MPI calls of the MPI handlers from the library mpi4py loaded; returns '' "
      "or why it failed.");
#endif

  // fftw_load(double_path, single_path) -> "" or why not; fftw_info() -> dict. FFTW is never
  // linked: Python (darray/_src/kernels/fftw.py) finds the libraries the user installed.
  m.def("fftw_load", &darray::fftw::Load,
        "Load FFTW (double, single precision) from these paths for the darray_fftw_cpu "
        "handler; returns '' or why it failed.");
  m.def(
      "fftw_info",
      []() {
        nb::dict d;
        d["double"] = darray::fftw::Loaded(darray::fftw::Precision::kDouble);
        d["single"] = darray::fftw::Loaded(darray::fftw::Precision::kSingle);
        d["version"] = darray::fftw::Version();
        d["double_path"] = darray::fftw::Path(darray::fftw::Precision::kDouble);
        d["single_path"] = darray::fftw::Path(darray::fftw::Precision::kSingle);
        d["cached_plans"] = darray::fftw::CachedPlans();
        d["unaligned_plans"] = darray::fftw::UnalignedPlans();
        return d;
      },
      "Which FFTW libraries darray loaded, their version and how many plans are cached.");

  // registrations() -> {target_name: capsule or {stage: capsule}}; one entry per
  // handler that was compiled in. CPU targets always exist; CUDA ones only with
  // DARRAY_ENABLE_CUDA.
  m.def(
      "registrations",
      []() {
        nb::dict d;
        d["darray_pad_axis_cpu"] = EncapsulateHandler(DarrayPadAxisCpu);
        d["darray_permute_cpu"] = EncapsulateHandler(DarrayPermuteCpu);
        d["darray_fftw_cpu"] = EncapsulateHandler(DarrayFftwCpu);
#ifdef DARRAY_HAS_MPI
        d["darray_mpi_all_to_all_cpu"] = EncapsulateHandler(DarrayMpiAllToAllCpu);
        d["darray_mpi_sendrecv_cpu"] = EncapsulateHandler(DarrayMpiSendRecvCpu);
#endif
#ifdef DARRAY_HAS_CUDA
        d["darray_pad_axis_cuda"] = EncapsulateHandler(DarrayPadAxisCuda);
#endif
#ifdef DARRAY_HAS_NCCL
        // Staged handlers: register_ffi_target takes {stage: capsule}.
        nb::dict transpose, sendrecv;
        transpose["prepare"] = EncapsulateHandler(DarrayNcclPrepareCuda);
        transpose["execute"] = EncapsulateHandler(DarrayNcclTransposeCuda);
        sendrecv["prepare"] = EncapsulateHandler(DarrayNcclPrepareCuda);
        sendrecv["execute"] = EncapsulateHandler(DarrayNcclSendRecvCuda);
        d["darray_nccl_transpose_cuda"] = transpose;
        d["darray_nccl_sendrecv_cuda"] = sendrecv;
#endif
#ifdef DARRAY_HAS_CUDECOMP
        d["darray_cudecomp_transpose_cuda"] = EncapsulateHandler(DarrayCudecompTransposeCuda);
        d["darray_cudecomp_halo_cuda"] = EncapsulateHandler(DarrayCudecompHaloCuda);
#endif
        return d;
      },
      "Return {target_name: PyCapsule} for every XLA FFI handler in this build.");

  // build_info() -> dict describing the build: which optional parts were
  // compiled in, the XLA FFI API version of the headers, compiler, nanobind.
  m.def(
      "build_info",
      []() {
        nb::dict d;
#ifdef DARRAY_HAS_CUDA
        d["cuda"] = true;
        d["cuda_runtime_version"] = CUDART_VERSION;
#else
        d["cuda"] = false;
#endif
#ifdef DARRAY_HAS_CUDECOMP
        d["cudecomp"] = true;
        d["cudecomp_version"] = std::to_string(CUDECOMP_MAJOR) + "." +
                                std::to_string(CUDECOMP_MINOR) + "." +
                                std::to_string(CUDECOMP_PATCH);
#else
        d["cudecomp"] = false;
#endif
#ifdef DARRAY_HAS_NCCL
        d["nccl"] = true;
        d["nccl_headers_version"] = NCCL_VERSION_CODE;
        d["xla_ffi_collectives"] =
            std::to_string(XLA_FFI_Extension_Collectives_MajorVersion) + "." +
            std::to_string(XLA_FFI_Extension_Collectives_MinorVersion);
#else
        d["nccl"] = false;
#endif
#ifdef DARRAY_HAS_MPI
        d["mpi"] = true;
        // Known once bound (the MPI backend binds on first use); MPI allows the call before
        // MPI_Init.
        if (darray::mpi::Bound()) d["mpi_library_version"] = darray::mpi::LibraryVersion();
#else
        d["mpi"] = false;
#endif
        d["fftw_provider"] = true;  // the loader; the library itself comes at run time
        d["xla_ffi_api"] = std::to_string(XLA_FFI_API_MAJOR) + "." +
                           std::to_string(XLA_FFI_API_MINOR);
        d["compiler"] = DARRAY_COMPILER;
        d["nanobind"] = std::to_string(NB_VERSION_MAJOR) + "." +
                        std::to_string(NB_VERSION_MINOR) + "." +
                        std::to_string(NB_VERSION_PATCH);
        return d;
      },
      "Return a dict describing what this build of darray._native contains.");
}
