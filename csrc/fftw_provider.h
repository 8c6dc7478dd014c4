// fftw_provider.h: FFTW as an optional local-FFT provider, loaded at run time.
//
// Why at run time: FFTW is GPL. darray is Apache-2.0 and never links, bundles or includes
// FFTW: the user installs a library (pyFFTW's wheel carries one, or a system libfftw3), darray
// finds its path (Python passes it in) and resolves the few guru64 calls it makes with dlsym.
// The types below are declared here from FFTW's documented ABI (fftw_iodim64 is three
// ptrdiff_t; a plan is an opaque pointer), so no FFTW header is needed to build.
//
// Plans are cached per (kind, precision, dims, strides, direction, flags, alignment) under one
// mutex: FFTW's planner is not thread-safe, its new-array execute functions are, so the XLA
// threads of 8 virtual devices share plans and run them concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace darray::fftw {

enum class Kind : int { kC2C = 0, kR2C = 1, kC2R = 2 };
enum class Precision : int { kDouble = 0, kSingle = 1 };

// Loads the double- and single-precision libraries from these paths ("" skips one). Returns ""
// when at least one precision is usable, else why not (each path's dlopen/dlsym error).
// Loading again with other paths replaces the libraries only if none is loaded yet.
std::string Load(const std::string& double_path, const std::string& single_path);

bool Loaded(Precision precision);
// fftw_version of the loaded library ("" when none), and the paths it came from.
std::string Version();
std::string Path(Precision precision);
// How many plans the cache holds (tests check that a repeated call plans nothing new).
int64_t CachedPlans();
// How many of them had to be made for arrays FFTW's SIMD code cannot take (FFTW_UNALIGNED).
int64_t UnalignedPlans();

struct Transform {
  Kind kind = Kind::kC2C;
  Precision precision = Precision::kDouble;
  bool forward = true;          // c2c only (r2c is forward, c2r backward)
  bool measure = false;         // FFTW_MEASURE instead of FFTW_ESTIMATE
  std::vector<int64_t> in_dims;   // row-major input dims
  std::vector<int64_t> out_dims;  // row-major output dims
  std::vector<int64_t> axes;      // transformed axes, in order (r2c/c2r: the last is halved)
  double scale = 1.0;             // applied to the output (numpy's norm)
};

// Runs `t` from `in` to `out` (distinct buffers; `in` is not modified). Returns "" or the error.
std::string Execute(const Transform& t, const void* in, void* out);

}  // namespace darray::fftw
