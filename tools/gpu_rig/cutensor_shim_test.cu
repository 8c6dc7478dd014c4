// Checks cutensor_permute_shim against a host reference on a GPU.  Works the
// same against the real libcutensor.so.2 (it only uses the public cuTENSOR 2.x
// API), which is how the shim's semantics were meant to be pinned down.
//
// Build (see README.md):  nvcc -std=c++17 -I<cutensor include> cutensor_shim_test.cu \
//                            -L<dir with libcutensor.so.2> -l:libcutensor.so.2 -o cutensor_shim_test
// Prints one line per case and "N passed, N failed" at the end; exit code 1 on any failure.

#include <cutensor.h>

#include <cuda_runtime.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static int g_passed = 0, g_failed = 0;

static void record(bool ok, const std::string& what) {
  (ok ? g_passed : g_failed)++;
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
}

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::printf("FAIL %s:%d %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

template <typename T> struct TypeInfo;
template <> struct TypeInfo<float> {
  static constexpr cudaDataType_t type = CUDA_R_32F;
  static const char* name() { return "R32F"; }
  static cutensorComputeDescriptor_t compute() { return CUTENSOR_COMPUTE_DESC_32F; }
  static float make(double re, double) { return static_cast<float>(re); }
  static double err(float a, float b) { return std::abs(double(a) - double(b)); }
  static float conj(float a) { return a; }
};
template <> struct TypeInfo<double> {
  static constexpr cudaDataType_t type = CUDA_R_64F;
  static const char* name() { return "R64F"; }
  static cutensorComputeDescriptor_t compute() { return CUTENSOR_COMPUTE_DESC_64F; }
  static double make(double re, double) { return re; }
  static double err(double a, double b) { return std::abs(a - b); }
  static double conj(double a) { return a; }
};
template <> struct TypeInfo<std::complex<float>> {
  static constexpr cudaDataType_t type = CUDA_C_32F;
  static const char* name() { return "C32F"; }
  static cutensorComputeDescriptor_t compute() { return CUTENSOR_COMPUTE_DESC_32F; }
  static std::complex<float> make(double re, double im) { return {float(re), float(im)}; }
  static double err(std::complex<float> a, std::complex<float> b) { return std::abs(a - b); }
  static std::complex<float> conj(std::complex<float> a) { return std::conj(a); }
};
template <> struct TypeInfo<std::complex<double>> {
  static constexpr cudaDataType_t type = CUDA_C_64F;
  static const char* name() { return "C64F"; }
  static cutensorComputeDescriptor_t compute() { return CUTENSOR_COMPUTE_DESC_64F; }
  static std::complex<double> make(double re, double im) { return {re, im}; }
  static double err(std::complex<double> a, std::complex<double> b) { return std::abs(a - b); }
  static std::complex<double> conj(std::complex<double> a) { return std::conj(a); }
};

struct Case {
  std::string label;
  std::vector<int64_t> extent_a;   // per A mode
  std::vector<int32_t> mode_a;
  std::vector<int32_t> mode_b;     // B's modes; extents follow from A (or broadcast_extent)
  int64_t broadcast_extent = 0;    // extent of a B mode that A lacks
  int64_t pad_a = 0, pad_b = 0;    // >0: explicit strides with this much padding per mode
  bool conj = false;
  double alpha_re = 1.0, alpha_im = 0.0;
};

// Column-major strides with `pad` extra elements per mode; pad < 0 means "pass NULL".
static std::vector<int64_t> strides_for(const std::vector<int64_t>& extent, int64_t pad) {
  std::vector<int64_t> s(extent.size());
  int64_t acc = 1;
  for (size_t i = 0; i < extent.size(); ++i) {
    s[i] = acc;
    acc *= extent[i] + pad;
  }
  return s;
}

static int64_t span(const std::vector<int64_t>& extent, const std::vector<int64_t>& stride) {
  int64_t last = 0;
  for (size_t i = 0; i < extent.size(); ++i) last += (extent[i] - 1) * stride[i];
  return last + 1;
}

template <typename T> static void run_case(cutensorHandle_t handle, cutensorPlanPreference_t pref, const Case& c) {
  using TI = TypeInfo<T>;
  const std::string what = std::string(TI::name()) + " " + c.label;
  std::vector<int64_t> extent_b(c.mode_b.size());
  for (size_t j = 0; j < c.mode_b.size(); ++j) {
    extent_b[j] = c.broadcast_extent;
    for (size_t k = 0; k < c.mode_a.size(); ++k)
      if (c.mode_a[k] == c.mode_b[j]) extent_b[j] = c.extent_a[k];
  }
  const auto stride_a = strides_for(c.extent_a, c.pad_a > 0 ? c.pad_a : 0);
  const auto stride_b = strides_for(extent_b, c.pad_b > 0 ? c.pad_b : 0);
  const int64_t n_a = span(c.extent_a, stride_a), n_b = span(extent_b, stride_b);

  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> host_a(n_a), host_b(n_b);
  for (auto& v : host_a) v = TI::make(dist(rng), dist(rng));
  const T sentinel = TI::make(-777.0, 555.0);   // padding in B must stay untouched
  for (auto& v : host_b) v = sentinel;

  T *dev_a = nullptr, *dev_b = nullptr;
  CUDA_OK(cudaMalloc(&dev_a, n_a * sizeof(T)));
  CUDA_OK(cudaMalloc(&dev_b, n_b * sizeof(T)));
  CUDA_OK(cudaMemcpy(dev_a, host_a.data(), n_a * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dev_b, host_b.data(), n_b * sizeof(T), cudaMemcpyHostToDevice));

  cutensorTensorDescriptor_t desc_a = nullptr, desc_b = nullptr;
  cutensorOperationDescriptor_t op = nullptr;
  cutensorPlan_t plan = nullptr;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cutensorStatus_t st = cutensorCreateTensorDescriptor(handle, &desc_a, c.mode_a.size(), c.extent_a.data(),
                                                       c.pad_a > 0 ? stride_a.data() : nullptr, TI::type, 256);
  if (st == CUTENSOR_STATUS_SUCCESS)
    st = cutensorCreateTensorDescriptor(handle, &desc_b, c.mode_b.size(), extent_b.data(),
                                        c.pad_b > 0 ? stride_b.data() : nullptr, TI::type, 256);
  if (st == CUTENSOR_STATUS_SUCCESS)
    st = cutensorCreatePermutation(handle, &op, desc_a, c.mode_a.data(),
                                   c.conj ? CUTENSOR_OP_CONJ : CUTENSOR_OP_IDENTITY, desc_b, c.mode_b.data(),
                                   TI::compute());
  if (st == CUTENSOR_STATUS_SUCCESS) st = cutensorCreatePlan(handle, &plan, op, pref, 0);
  const T alpha = TI::make(c.alpha_re, c.alpha_im);
  if (st == CUTENSOR_STATUS_SUCCESS) st = cutensorPermute(handle, plan, &alpha, dev_a, dev_b, stream);
  if (st != CUTENSOR_STATUS_SUCCESS) {
    record(false, what + ": " + cutensorGetErrorString(st));
  } else {
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(host_b.data(), dev_b, n_b * sizeof(T), cudaMemcpyDeviceToHost));
    // Reference: enumerate every element of B by its multi-index, find the A
    // element with the same mode labels (broadcast modes do not index A).
    std::vector<T> expect(n_b, sentinel);
    std::vector<int64_t> idx(extent_b.size(), 0);
    int64_t total = 1;
    for (auto e : extent_b) total *= e;
    for (int64_t n = 0; n < total; ++n) {
      int64_t off_a = 0, off_b = 0;
      for (size_t j = 0; j < extent_b.size(); ++j) {
        off_b += idx[j] * stride_b[j];
        for (size_t k = 0; k < c.mode_a.size(); ++k)
          if (c.mode_a[k] == c.mode_b[j]) off_a += idx[j] * stride_a[k];
      }
      const T a = c.conj ? TI::conj(host_a[off_a]) : host_a[off_a];
      expect[off_b] = alpha * a;
      for (size_t j = 0; j < idx.size() && ++idx[j] == extent_b[j]; ++j) idx[j] = 0;   // odometer
    }
    double worst = 0.0;
    for (int64_t i = 0; i < n_b; ++i) worst = std::max(worst, TI::err(expect[i], host_b[i]));
    record(worst <= 1e-6, what + " max|err|=" + std::to_string(worst));
  }
  if (plan) cutensorDestroyPlan(plan);
  if (op) cutensorDestroyOperationDescriptor(op);
  if (desc_a) cutensorDestroyTensorDescriptor(desc_a);
  if (desc_b) cutensorDestroyTensorDescriptor(desc_b);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(dev_a));
  CUDA_OK(cudaFree(dev_b));
}

template <typename T> static void run_all(cutensorHandle_t handle, cutensorPlanPreference_t pref) {
  const int32_t perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (auto& p : perms) {
    for (int padded = 0; padded < 2; ++padded) {
      Case c;
      c.label = "3d perm " + std::to_string(p[0]) + std::to_string(p[1]) + std::to_string(p[2]) +
                (padded ? " padded strides" : " packed");
      c.extent_a = {37, 19, 23};   // odd sizes: no accidental divisibility
      c.mode_a = {0, 1, 2};
      c.mode_b = {p[0], p[1], p[2]};
      c.pad_a = padded ? 3 : 0;
      c.pad_b = padded ? 2 : 0;
      run_case<T>(handle, pref, c);
    }
  }
  Case scaled;
  scaled.label = "3d perm 201 alpha=(2.5,-0.75)";
  scaled.extent_a = {8, 5, 6};
  scaled.mode_a = {'a', 'b', 'c'};   // labels are arbitrary integers, not positions
  scaled.mode_b = {'c', 'a', 'b'};
  scaled.alpha_re = 2.5;
  scaled.alpha_im = -0.75;
  run_case<T>(handle, pref, scaled);
  Case conj = scaled;
  conj.label = "3d perm 201 conj op, alpha=(2.5,-0.75)";
  conj.conj = true;
  run_case<T>(handle, pref, conj);
  Case bcast;
  bcast.label = "broadcast: B[i,j,k] = A[k,i]";
  bcast.extent_a = {7, 9};
  bcast.mode_a = {2, 0};
  bcast.mode_b = {0, 1, 2};
  bcast.broadcast_extent = 4;
  run_case<T>(handle, pref, bcast);
  Case big;
  big.label = "3d perm 120 of 256x128x96 (grid-stride loop)";
  big.extent_a = {256, 128, 96};
  big.mode_a = {0, 1, 2};
  big.mode_b = {1, 2, 0};
  run_case<T>(handle, pref, big);
  Case five;
  five.label = "5d perm 42031";
  five.extent_a = {3, 4, 5, 2, 6};
  five.mode_a = {0, 1, 2, 3, 4};
  five.mode_b = {4, 2, 0, 3, 1};
  run_case<T>(handle, pref, five);
}

static void expect_status(cutensorStatus_t got, cutensorStatus_t want, const std::string& what) {
  record(got == want, what + " -> " + cutensorGetErrorString(got));
}

static void error_paths(cutensorHandle_t handle, cutensorPlanPreference_t pref) {
  int64_t ext3[3] = {4, 5, 6}, ext3b[3] = {5, 4, 7};
  cutensorTensorDescriptor_t a = nullptr, b = nullptr;
  cutensorOperationDescriptor_t op = nullptr;
  cutensorPlan_t plan = nullptr;
  expect_status(cutensorCreateTensorDescriptor(nullptr, &a, 3, ext3, nullptr, CUDA_R_32F, 256),
                CUTENSOR_STATUS_NOT_INITIALIZED, "descriptor with null handle");
  int64_t bad_ext[3] = {4, 0, 6};
  expect_status(cutensorCreateTensorDescriptor(handle, &a, 3, bad_ext, nullptr, CUDA_R_32F, 256),
                CUTENSOR_STATUS_INVALID_VALUE, "descriptor with a zero extent");
  cutensorCreateTensorDescriptor(handle, &a, 3, ext3, nullptr, CUDA_R_32F, 256);
  cutensorCreateTensorDescriptor(handle, &b, 3, ext3b, nullptr, CUDA_R_32F, 256);
  int32_t ma[3] = {0, 1, 2}, mb[3] = {1, 0, 2};
  cutensorStatus_t st = cutensorCreatePermutation(handle, &op, a, ma, CUTENSOR_OP_IDENTITY, b, mb,
                                                  CUTENSOR_COMPUTE_DESC_32F);
  if (st == CUTENSOR_STATUS_SUCCESS) st = cutensorCreatePlan(handle, &plan, op, pref, 0);
  record(st != CUTENSOR_STATUS_SUCCESS, std::string("mismatched extent of mode 2 (6 vs 7) is refused -> ") +
                                            cutensorGetErrorString(st));
  if (plan) cutensorDestroyPlan(plan);
  if (op) cutensorDestroyOperationDescriptor(op);
  // A mode of A missing from B would be a reduction, not a permutation.
  int32_t mr[3] = {0, 1, 3};
  op = nullptr;
  plan = nullptr;
  st = cutensorCreatePermutation(handle, &op, a, ma, CUTENSOR_OP_IDENTITY, a, mr, CUTENSOR_COMPUTE_DESC_32F);
  if (st == CUTENSOR_STATUS_SUCCESS) st = cutensorCreatePlan(handle, &plan, op, pref, 0);
  record(st != CUTENSOR_STATUS_SUCCESS, std::string("mode of A absent from B is refused -> ") +
                                            cutensorGetErrorString(st));
  if (plan) cutensorDestroyPlan(plan);
  if (op) cutensorDestroyOperationDescriptor(op);
  float one = 1.0f;
  expect_status(cutensorPermute(nullptr, nullptr, &one, nullptr, nullptr, 0), CUTENSOR_STATUS_NOT_INITIALIZED,
                "permute with null handle");
  cutensorDestroyTensorDescriptor(a);
  cutensorDestroyTensorDescriptor(b);
}

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("no CUDA device: cannot run\n");
    return 2;
  }
  std::printf("cuTENSOR library version %zu (header %d)\n", cutensorGetVersion(), CUTENSOR_VERSION);
  cutensorHandle_t handle = nullptr;
  cutensorPlanPreference_t pref = nullptr;
  if (cutensorCreate(&handle) != CUTENSOR_STATUS_SUCCESS ||
      cutensorCreatePlanPreference(handle, &pref, CUTENSOR_ALGO_DEFAULT, CUTENSOR_JIT_MODE_NONE) !=
          CUTENSOR_STATUS_SUCCESS) {
    std::printf("FAIL cutensorCreate / cutensorCreatePlanPreference\n");
    return 1;
  }
  run_all<float>(handle, pref);
  run_all<double>(handle, pref);
  run_all<std::complex<float>>(handle, pref);
  run_all<std::complex<double>>(handle, pref);
  error_paths(handle, pref);
  cutensorDestroyPlanPreference(pref);
  cutensorDestroy(handle);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
