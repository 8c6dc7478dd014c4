// fftw_provider.cc: see fftw_provider.h. FFTW's guru64 interface, resolved with dlsym.
#include "fftw_provider.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace darray::fftw {
namespace {

// FFTW's documented ABI (fftw3.h): the guru64 dimension, plan flags and signs.
struct IoDim64 {
  ptrdiff_t n, is, os;
};
using Plan = void*;
constexpr unsigned kMeasure = 0U;
constexpr unsigned kUnaligned = 1U << 1;
constexpr unsigned kEstimate = 1U << 6;
constexpr int kForward = -1;
constexpr int kBackward = +1;
// A chunk of leading slices that stays in a core's L2 cache (512 KiB): its scale and its c2r
// input copy then cost no pass over memory.
constexpr int64_t kChunkBytes = int64_t{1} << 19;
// Column tiles (`ExecuteTiled`): a tile's rows are this many bytes of contiguous columns (16
// cache lines: 256 bytes took 1.3-1.5x as long, 2-4 KiB no less), its buffer at most
// kTileBytes.
constexpr int64_t kTileRowBytes = 1024;
constexpr int64_t kTileBytes = int64_t{1} << 19;

// The calls darray makes, one table per precision; `Real` is double or float and FFTW's
// complex type is Real[2], so pointers to it are passed as void*.
struct Api {
  void* handle = nullptr;
  std::string path;
  std::string version;
  Plan (*plan_dft)(int, const IoDim64*, int, const IoDim64*, void*, void*, int,
                   unsigned) = nullptr;
  Plan (*plan_r2c)(int, const IoDim64*, int, const IoDim64*, void*, void*, unsigned) = nullptr;
  Plan (*plan_c2r)(int, const IoDim64*, int, const IoDim64*, void*, void*, unsigned) = nullptr;
  void (*execute_dft)(Plan, void*, void*) = nullptr;
  void (*execute_r2c)(Plan, void*, void*) = nullptr;
  void (*execute_c2r)(Plan, void*, void*) = nullptr;
  void (*destroy_plan)(Plan) = nullptr;
  int (*alignment_of)(void*) = nullptr;
};

Api g_api[2];
std::mutex g_mutex;  // guards g_api while loading, the plan cache and every planner call

template <typename Fn>
bool Resolve(void* handle, const std::string& name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name.c_str()));
  if (*fn == nullptr) *missing += (missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

std::string LoadOne(const std::string& path, const std::string& prefix, Api* api) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return "cannot load " + path + ": " + (err ? err : "dlopen failed");
  }
  Api a;
  std::string missing;
  Resolve(handle, prefix + "plan_guru64_dft", &a.plan_dft, &missing);
  Resolve(handle, prefix + "plan_guru64_dft_r2c", &a.plan_r2c, &missing);
  Resolve(handle, prefix + "plan_guru64_dft_c2r", &a.plan_c2r, &missing);
  Resolve(handle, prefix + "execute_dft", &a.execute_dft, &missing);
  Resolve(handle, prefix + "execute_dft_r2c", &a.execute_r2c, &missing);
  Resolve(handle, prefix + "execute_dft_c2r", &a.execute_c2r, &missing);
  Resolve(handle, prefix + "destroy_plan", &a.destroy_plan, &missing);
  Resolve(handle, prefix + "alignment_of", &a.alignment_of, &missing);
  if (!missing.empty()) {
    dlclose(handle);
    return path + " is not FFTW 3.3 or newer (" + prefix + " symbols missing: " + missing + ")";
  }
  // fftw_version is a char array: dlsym gives its address.
  if (const char* v = static_cast<const char*>(dlsym(handle, (prefix + "version").c_str()))) {
    a.version = v;
  }
  a.handle = handle;
  a.path = path;
  *api = a;
  return "";
}

// One cached plan's key: everything FFTW's plan depends on (the last field: in place, for the
// column tiles of `ExecuteTiled`).
using Key = std::tuple<int, int, int, unsigned, std::vector<ptrdiff_t>, std::vector<ptrdiff_t>,
                       bool>;
std::map<Key, Plan> g_plans;

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int k = static_cast<int>(dims.size()) - 2; k >= 0; --k) s[k] = s[k + 1] * dims[k + 1];
  return s;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Scratch = std::unique_ptr<unsigned char, AlignedFree>;

Scratch Allocate(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  return Scratch(static_cast<unsigned char*>(std::aligned_alloc(64, rounded ? rounded : 64)));
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The shapes `t` promises, checked: returns "" or what is wrong.
std::string Check(const Transform& t) {
  const size_t rank = t.in_dims.size();
  if (rank == 0 || t.out_dims.size() != rank) return "input and output ranks differ or are 0";
  if (t.axes.empty() || t.axes.size() > rank) return "no axes to transform";
  std::vector<bool> seen(rank, false);
  for (int64_t a : t.axes) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[a]) return "axes are not distinct axes";
    seen[a] = true;
  }
  const int64_t h = t.axes.back();
  for (size_t k = 0; k < rank; ++k) {
    const int64_t in = t.in_dims[k], out = t.out_dims[k];
    if (in <= 0 || out <= 0) return "empty dimensions";
    bool ok = in == out;
    if (static_cast<int64_t>(k) == h && t.kind == Kind::kR2C) ok = out == in / 2 + 1;
    if (static_cast<int64_t>(k) == h && t.kind == Kind::kC2R) ok = in == out / 2 + 1;
    if (!ok) return "output dims do not match the input dims for this kind of transform";
  }
  return "";
}

template <typename Real>
void Scale(void* out, int64_t reals, double scale) {
  Real* p = static_cast<Real*>(out);
  const Real s = static_cast<Real>(scale);
  for (int64_t i = 0; i < reals; ++i) p[i] *= s;
}

// Whether `t` runs in column tiles: one c2c axis whose column stride (the bytes behind one
// element of the axis) is a multiple of 2 KiB, so that a column's elements fall on 1/32 of the
// cache sets or fewer, over at least two tiles of columns. Measured on one core (FFTW_MEASURE,
// complex128, tiles of 256 bytes): (256, 128, 129) along axis 0 41 -> 29 ms; a (128, 64, 65)
// block (stride 65 KiB) took 1.3 ms through FFTW's own plan and 2.0 ms in tiles, hence the
// rule.
bool TakesTiles(const Transform& t, size_t elem) {
  if (t.kind != Kind::kC2C || t.axes.size() != 1) return false;
  int64_t inner = 1;
  for (size_t k = static_cast<size_t>(t.axes[0]) + 1; k < t.in_dims.size(); ++k) {
    inner *= t.in_dims[k];
  }
  const int64_t stride_bytes = inner * static_cast<int64_t>(elem);
  return stride_bytes % 2048 == 0 && stride_bytes >= 2 * kTileRowBytes;
}

// A c2c transform of one axis that is not the minor one, over a batch of contiguous columns
// behind it (the leading axis of a slab after its exchange): [outer][n][inner]. FFTW's own
// plan for that reads and writes each length-n column at a stride of `inner` elements; where
// that stride is a power of two every element of a column falls on the same cache sets, and
// the transform took 2.5x (FFTW_MEASURE) to 16x (FFTW_ESTIMATE) as long as over the minor axis
// (256^3 complex128 slab, one core). Instead the columns go through a buffer in tiles: `width`
// columns of all n rows are copied in (contiguous row pieces, each read once), transformed in
// place there with a row pitch one cache line longer than the row (so rows spread over all
// sets), scaled and copied out. The block is still read once and written once: (128, 64, 128)
// along axis 0 then took 3.6 ms (FFTW's own plan 5.3-6.2), (256, 128, 256) 38 ms (71).
std::string ExecuteTiled(const Transform& t, const Api& api, int p, size_t elem, const void* in,
                         void* out) {
  const int64_t axis = t.axes[0];
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= t.in_dims[k];
  for (size_t k = static_cast<size_t>(axis) + 1; k < t.in_dims.size(); ++k) inner *= t.in_dims[k];
  const int64_t n = t.in_dims[axis];
  const int64_t line = 64 / static_cast<int64_t>(elem);  // elements per cache line
  int64_t width = kTileRowBytes / static_cast<int64_t>(elem);
  while (width > line && n * (width + line) * static_cast<int64_t>(elem) > kTileBytes) width /= 2;
  width = std::min(width, inner);
  const int64_t pitch = (width + line - 1) / line * line + line;
  Scratch buffer = Allocate(static_cast<size_t>(n * pitch) * elem);
  if (!buffer) return "out of memory for the column tile";
  const int sign = t.forward ? kForward : kBackward;
  const unsigned flags = t.measure ? kMeasure : kEstimate;
  // `width` (a power of two, at most 1 KiB of columns) divides `inner`, whose bytes are a
  // multiple of 2 KiB (`TakesTiles`): every tile is whole, and one plan serves them all:
  // `width` columns in place, rows `pitch` apart
  const IoDim64 dim{static_cast<ptrdiff_t>(n), static_cast<ptrdiff_t>(pitch),
                    static_cast<ptrdiff_t>(pitch)};
  const IoDim64 batch{static_cast<ptrdiff_t>(width), 1, 1};
  const Key key{static_cast<int>(Kind::kC2C), p, sign, flags, {dim.n, dim.is, dim.os},
                {batch.n, batch.is, batch.os}, true};
  Plan plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto found = g_plans.find(key);
    if (found != g_plans.end()) {
      plan = found->second;
    } else {
      // in place on this call's buffer: FFTW_MEASURE's trials only scribble on scratch
      plan = api.plan_dft(1, &dim, 1, &batch, buffer.get(), buffer.get(), sign, flags);
      if (plan != nullptr) g_plans.emplace(key, plan);
    }
  }
  if (plan == nullptr) return "FFTW returned no plan for a column tile";
  const size_t row = static_cast<size_t>(pitch) * elem;
  const size_t piece = static_cast<size_t>(width) * elem;  // one row's share of a tile
  unsigned char* buf = buffer.get();
  for (int64_t o = 0; o < outer; ++o) {
    const unsigned char* src = static_cast<const unsigned char*>(in) + o * n * inner * elem;
    unsigned char* dst = static_cast<unsigned char*>(out) + o * n * inner * elem;
    for (int64_t j = 0; j < inner; j += width) {
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(buf + r * row, src + (r * inner + j) * elem, piece);
      }
      api.execute_dft(plan, buf, buf);
      if (t.scale != 1.0) {  // the whole tile, padding included, while it is in cache
        if (p == 0) {
          Scale<double>(buf, 2 * n * pitch, t.scale);
        } else {
          Scale<float>(buf, 2 * n * pitch, t.scale);
        }
      }
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(dst + (r * inner + j) * elem, buf + r * row, piece);
      }
    }
  }
  return "";
}

}  // namespace

std::string Load(const std::string& double_path, const std::string& single_path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api[0].handle != nullptr || g_api[1].handle != nullptr) return "";
  std::string why;
  const std::string paths[2] = {double_path, single_path};
  const char* prefixes[2] = {"fftw_", "fftwf_"};
  for (int p = 0; p < 2; ++p) {
    if (paths[p].empty()) continue;
    std::string err = LoadOne(paths[p], prefixes[p], &g_api[p]);
    if (!err.empty()) why += (why.empty() ? "" : "; ") + err;
  }
  if (g_api[0].handle != nullptr || g_api[1].handle != nullptr) return "";
  return why.empty() ? "no FFTW library path was given" : why;
}

bool Loaded(Precision precision) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_api[static_cast<int>(precision)].handle != nullptr;
}

std::string Version() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return !g_api[0].version.empty() ? g_api[0].version : g_api[1].version;
}

std::string Path(Precision precision) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_api[static_cast<int>(precision)].path;
}

int64_t CachedPlans() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return static_cast<int64_t>(g_plans.size());
}

int64_t UnalignedPlans() {
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t n = 0;
  for (const auto& entry : g_plans) n += (std::get<3>(entry.first) & kUnaligned) != 0;
  return n;
}

std::string Execute(const Transform& t, const void* in, void* out) {
  const int p = static_cast<int>(t.precision);
  const Api& api = g_api[p];  // written once, under the mutex, before any handler can run
  if (api.handle == nullptr) {
    return std::string("no FFTW library of ") + (p == 0 ? "double" : "single") +
           " precision is loaded";
  }
  std::string err = Check(t);
  if (!err.empty()) return err;
  const size_t complex_bytes = (p == 0 ? sizeof(double) : sizeof(float)) * 2;
  if (TakesTiles(t, complex_bytes)) return ExecuteTiled(t, api, p, complex_bytes, in, out);
  const size_t real_bytes = p == 0 ? sizeof(double) : sizeof(float);
  const size_t in_elem = real_bytes * (t.kind == Kind::kR2C ? 1 : 2);
  const size_t out_elem = real_bytes * (t.kind == Kind::kC2R ? 1 : 2);
  const int64_t in_count = Product(t.in_dims), out_count = Product(t.out_dims);

  // Chunks of the leading axis, when it is a batch axis (not transformed): one plan for k of
  // its slices, executed slice group after slice group on the same strides (FFTW's new-array
  // execute). The numpy scale and c2r's input copy (FFTW's multi-dimensional c2r overwrites
  // its input, and XLA's input buffer is not ours to change) then run on a chunk still in
  // cache, instead of each costing one more pass over the whole block in memory.
  const int64_t lead = t.in_dims[0];
  const bool lead_batch =
      t.in_dims.size() > 1 && lead > 1 &&
      std::find(t.axes.begin(), t.axes.end(), int64_t{0}) == t.axes.end();
  const int64_t in_slice = in_count / t.in_dims[0], out_slice = out_count / t.out_dims[0];
  int64_t rows = lead;  // leading slices per chunk: a divisor of `lead` (all: no chunks)
  if (lead_batch) {
    // the largest divisor whose chunk fits kChunkBytes, else the smallest (slices larger
    // than the cache still save the separate passes' second read)
    for (int64_t d = 1; d <= lead; ++d) {
      if (lead % d != 0) continue;
      const int64_t bytes = d * in_slice * static_cast<int64_t>(in_elem);
      // every chunk starts at the same alignment as the first (64-byte multiples)
      const bool keeps_alignment = bytes % 64 == 0 &&
                                   (d * out_slice * static_cast<int64_t>(out_elem)) % 64 == 0;
      if (!keeps_alignment) continue;
      if (rows == lead || bytes <= kChunkBytes) rows = d;
      if (bytes > kChunkBytes) break;
    }
  }
  const int64_t chunks = lead / rows;
  std::vector<int64_t> chunk_in = t.in_dims, chunk_out = t.out_dims;
  if (chunks > 1) {  // a batch axis: the same length in and out
    chunk_in[0] = rows;
    chunk_out[0] = rows;
  }
  const int64_t chunk_in_count = in_count / chunks, chunk_out_count = out_count / chunks;

  Scratch copy;  // c2r's input, one chunk at a time
  void* src = const_cast<void*>(in);
  if (t.kind == Kind::kC2R) {
    copy = Allocate(chunk_in_count * in_elem);
    if (!copy) return "out of memory for the c2r input copy";
    src = copy.get();
  }

  // The guru dims: transformed axes (logical lengths), then the others as batch ("howmany")
  // dims; strides in each array's own element units, so any axis is transformed in place
  // of a transpose.
  const std::vector<int64_t> is = RowMajorStrides(chunk_in), os = RowMajorStrides(chunk_out);
  std::vector<IoDim64> dims, howmany;
  std::vector<bool> transformed(chunk_in.size(), false);
  for (int64_t a : t.axes) {
    transformed[a] = true;
    const int64_t n = t.kind == Kind::kC2R ? chunk_out[a] : chunk_in[a];
    dims.push_back({static_cast<ptrdiff_t>(n), static_cast<ptrdiff_t>(is[a]),
                    static_cast<ptrdiff_t>(os[a])});
  }
  for (size_t k = 0; k < chunk_in.size(); ++k) {
    if (!transformed[k]) {
      howmany.push_back({static_cast<ptrdiff_t>(chunk_in[k]), static_cast<ptrdiff_t>(is[k]),
                         static_cast<ptrdiff_t>(os[k])});
    }
  }
  const bool aligned = api.alignment_of(static_cast<double*>(src)) == 0 &&
                       api.alignment_of(static_cast<double*>(out)) == 0;
  const unsigned flags = (t.measure ? kMeasure : kEstimate) | (aligned ? 0U : kUnaligned);
  const int sign = t.kind == Kind::kC2C ? (t.forward ? kForward : kBackward)
                                        : (t.kind == Kind::kR2C ? kForward : kBackward);
  std::vector<ptrdiff_t> dim_key, howmany_key;
  for (const IoDim64& d : dims) dim_key.insert(dim_key.end(), {d.n, d.is, d.os});
  for (const IoDim64& d : howmany) howmany_key.insert(howmany_key.end(), {d.n, d.is, d.os});
  const Key key{static_cast<int>(t.kind), p, sign, flags, dim_key, howmany_key, false};

  Plan plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto found = g_plans.find(key);
    if (found != g_plans.end()) {
      plan = found->second;
    } else {
      // FFTW_ESTIMATE never touches the arrays, so it plans on the call's own; FFTW_MEASURE
      // runs trial transforms, so it plans on scratch arrays of the same alignment (64 bytes).
      Scratch plan_in, plan_out;
      void* pi = src;
      void* po = out;
      if (t.measure) {
        plan_in = Allocate(chunk_in_count * in_elem);
        plan_out = Allocate(chunk_out_count * out_elem);
        if (!plan_in || !plan_out) return "out of memory for FFTW_MEASURE's trial arrays";
        pi = plan_in.get();
        po = plan_out.get();
      }
      const int rank = static_cast<int>(dims.size());
      const int hrank = static_cast<int>(howmany.size());
      if (t.kind == Kind::kC2C) {
        plan = api.plan_dft(rank, dims.data(), hrank, howmany.data(), pi, po, sign, flags);
      } else if (t.kind == Kind::kR2C) {
        plan = api.plan_r2c(rank, dims.data(), hrank, howmany.data(), pi, po, flags);
      } else {
        plan = api.plan_c2r(rank, dims.data(), hrank, howmany.data(), pi, po, flags);
      }
      if (plan == nullptr) return "FFTW returned no plan for this transform";
      g_plans.emplace(key, plan);
    }
  }
  const size_t in_step = static_cast<size_t>(chunk_in_count) * in_elem;
  const size_t out_step = static_cast<size_t>(chunk_out_count) * out_elem;
  const int64_t reals = chunk_out_count * static_cast<int64_t>(out_elem / real_bytes);
  for (int64_t c = 0; c < chunks; ++c) {
    unsigned char* o = static_cast<unsigned char*>(out) + c * out_step;
    const unsigned char* i = static_cast<const unsigned char*>(in) + c * in_step;
    if (t.kind == Kind::kC2C) {
      api.execute_dft(plan, const_cast<unsigned char*>(i), o);
    } else if (t.kind == Kind::kR2C) {
      api.execute_r2c(plan, const_cast<unsigned char*>(i), o);
    } else {
      std::memcpy(copy.get(), i, in_step);
      api.execute_c2r(plan, copy.get(), o);
    }
    if (t.scale != 1.0) {
      if (p == 0) {
        Scale<double>(o, reals, t.scale);
      } else {
        Scale<float>(o, reals, t.scale);
      }
    }
  }
  return "";
}

}  // namespace darray::fftw
