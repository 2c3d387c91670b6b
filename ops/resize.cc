#include "ops/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// Bilinear along one axis: output o reads input first[o] and first[o] + 1 (kept inside the
// image), as first + weight * (second - first). That form keeps a constant input exactly constant.
struct LinearTaps {
  std::vector<int32_t> first;
  std::vector<float> weight;
};

LinearTaps MakeLinearTaps(double start, double length, int64_t in, int64_t out) {
  LinearTaps t;
  t.first.resize(out);
  t.weight.resize(out);
  const double scale = length / static_cast<double>(out);
  // Sample positions stay on the centres of the pixels the region touches.
  const double lo = std::max(0.0, std::floor(start));
  const double hi = std::min(static_cast<double>(in - 1), std::ceil(start + length) - 1);
  for (int64_t o = 0; o < out; ++o) {
    double s = start + (static_cast<double>(o) + 0.5) * scale - 0.5;
    s = std::clamp(s, lo, std::max(lo, hi));
    int64_t i = static_cast<int64_t>(std::floor(s));
    double w = s - static_cast<double>(i);
    if (i >= in - 1) {  // The last pixel: read it as the second tap with weight 1.
      i = std::max<int64_t>(in - 2, 0);
      w = in >= 2 ? 1.0 : 0.0;
    }
    t.first[o] = static_cast<int32_t>(i);
    t.weight[o] = static_cast<float>(w);
  }
  return t;
}

// Box filter along one axis: output o averages inputs [first[o], first[o] + taps) with
// weights[o * taps + k] (zero-padded), the fractions of [start + o * scale, start + (o + 1) *
// scale) they cover.
struct AreaTaps {
  int taps = 1;
  std::vector<int32_t> first;
  std::vector<float> weights;
};

AreaTaps MakeAreaTaps(double start, double length, int64_t in, int64_t out) {
  AreaTaps t;
  const double scale = length / static_cast<double>(out);
  std::vector<std::pair<int64_t, int64_t>> spans(out);
  for (int64_t o = 0; o < out; ++o) {
    const double a = start + static_cast<double>(o) * scale;
    const double b = start + static_cast<double>(o + 1) * scale;
    const int64_t i0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(a)), 0, in - 1);
    const int64_t i1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(b)), i0 + 1, in);
    spans[o] = {i0, i1};
    t.taps = std::max<int>(t.taps, static_cast<int>(i1 - i0));
  }
  t.first.resize(out);
  t.weights.assign(static_cast<size_t>(out) * t.taps, 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const double a = start + static_cast<double>(o) * scale;
    const double b = start + static_cast<double>(o + 1) * scale;
    const auto [i0, i1] = spans[o];
    const int64_t first = std::min(i0, in - t.taps);
    t.first[o] = static_cast<int32_t>(first);
    double total = 0;
    std::vector<double> w(t.taps, 0.0);
    for (int64_t i = i0; i < i1; ++i) {
      const double cover =
          std::min(b, static_cast<double>(i + 1)) - std::max(a, static_cast<double>(i));
      w[i - first] = std::max(0.0, cover);
      total += w[i - first];
    }
    if (total <= 0) {  // A degenerate (zero-width) span: take the pixel under it.
      w[i0 - first] = 1;
      total = 1;
    }
    for (int k = 0; k < t.taps; ++k) {
      t.weights[o * t.taps + k] = static_cast<float>(w[k] / total);
    }
  }
  return t;
}

// Stores a float result: uint8 rounds to nearest, halves up. Inputs are convex combinations of
// uint8 values, so v + 0.5 stays within [0, 256) up to float rounding; the clamp is for safety.
template <typename T>
inline T Store(float v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(static_cast<int>(std::clamp(v + 0.5f, 0.0f, 255.0f)));
  } else {
    return v;
  }
}

// The two row loops that dominate bilinear resizing, compiled twice (AVX2 and the baseline) with
// the right one picked at load time: with AVX2 the compiler vectorises them 8 floats wide.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SLUICE_RESIZE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SLUICE_RESIZE_CLONES
#endif

// out[i] = a[i] + w * (b[i] - a[i]).
template <typename T>
inline void BlendRowsImpl(const T* a, const T* b, float w, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float fa = static_cast<float>(a[i]);
    out[i] = fa + w * (static_cast<float>(b[i]) - fa);
  }
}
SLUICE_RESIZE_CLONES void BlendRows(const uint8_t* a, const uint8_t* b, float w, size_t n,
                                    float* out) {
  BlendRowsImpl(a, b, w, n, out);
}
SLUICE_RESIZE_CLONES void BlendRows(const float* a, const float* b, float w, size_t n, float* out) {
  BlendRowsImpl(a, b, w, n, out);
}

SLUICE_RESIZE_CLONES void StoreRow(const float* in, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = Store<uint8_t>(in[i]);
}
void StoreRow(const float* in, size_t n, float* out) { std::memcpy(out, in, n * sizeof(float)); }

// Copies `bytes` with non-temporal stores where the CPU has them: the destination's cache lines
// are written without being read first and without evicting what the caller works on. Callers
// issue StreamFence before another thread may read the destination.
void StreamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();  // Non-temporal stores are weakly ordered, even on x86.
#endif
}

// Four floats, for the per-pixel lerp of 3- and 4-channel rows (GCC/Clang vector extension:
// portable, lowered to SSE/AVX/NEON).
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

inline Float4 Load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The rounding of Store<uint8_t>, 4 lanes at once: the same clamp, then truncation.
inline Int4 Round4(Float4 v) {
  v += 0.5f;
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return __builtin_convertvector(v, Int4);
}

// The horizontal lerp, rounding and table lookup of one pixel of a 3-channel row: the final
// floats of pixel k of the row at `dst` lerp p[c] and p[3 + c] with weight w and look the rounded
// value up in table + c * 256. The same arithmetic as the unfused path, lane by lane.
inline void LerpNormalizePixel3(const float* p, float w, const float* table, float* dst) {
  const Float4 left = Load4(p), right = Load4(p + 3);
  const Int4 q = Round4(left + w * (right - left));
  dst[0] = table[q[0]];
  dst[1] = table[256 + q[1]];
  dst[2] = table[512 + q[2]];
}

// A whole row: pixel k from row + offsets[k] with weights[k] (the caller reverses both to flip).
void LerpNormalizeRow3Portable(const float* row, const int32_t* offsets, const float* weights,
                               int64_t out_w, const float* table, float* dst) {
  for (int64_t k = 0; k < out_w; ++k) {
    LerpNormalizePixel3(row + offsets[k], weights[k], table, dst + k * 3);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SLUICE_RESIZE_AVX2 1
// The lerp and rounding of the pixels at pa (low half) and pb (high half) with weights w, as
// int32 lanes. No FMA (the target is "avx2" alone): the lerp rounds its multiply and its add
// separately, as the portable code does, so the results stay bitwise the same.
__attribute__((target("avx2"), always_inline)) inline __m256i LerpRound2(const float* pa,
                                                                         const float* pb,
                                                                         __m256 w) {
  const __m256 left = _mm256_loadu2_m128(pb, pa), right = _mm256_loadu2_m128(pb + 3, pa + 3);
  __m256 v = _mm256_add_ps(left, _mm256_mul_ps(w, _mm256_sub_ps(right, left)));
  v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, _mm256_set1_ps(0.5f)), _mm256_setzero_ps()),
                    _mm256_set1_ps(255.0f));
  return _mm256_cvttps_epi32(v);
}

// LerpNormalizeRow3Portable with AVX2, 4 pixels (12 floats, 3 vectors) at a time: 2 pixels a
// vector for the arithmetic, scalar loads for the lookups (as fast as AVX2 gathers on the AMD
// Zen 4 it was measured on, where gathers are slow; untested on Intel), written with
// non-temporal stores when `stream` (dst must then be 16-byte aligned): no staging row to copy.
// `table` is NormalizeTable::at(0): the channels' 256 values follow each other.
__attribute__((target("avx2"))) void LerpNormalizeRow3Avx2(const float* row, const int32_t* offsets,
                                                           const float* weights, int64_t out_w,
                                                           const float* table, float* dst,
                                                           bool stream) {
  const __m256i lo_w = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i hi_w = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
  // Each pixel's lanes: channels 0, 1, 2 and a 4th lane (unused) read from channel 0's table.
  const __m256i channel = _mm256_setr_epi32(0, 256, 512, 0, 0, 256, 512, 0);
  int64_t k = 0;
  for (; k + 4 <= out_w; k += 4) {
    const __m256 w4 = _mm256_castps128_ps256(_mm_loadu_ps(weights + k));
    const __m256i ab =
        LerpRound2(row + offsets[k], row + offsets[k + 1], _mm256_permutevar8x32_ps(w4, lo_w));
    const __m256i cd =
        LerpRound2(row + offsets[k + 2], row + offsets[k + 3], _mm256_permutevar8x32_ps(w4, hi_w));
    alignas(32) uint32_t q[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_add_epi32(ab, channel));
    _mm256_store_si256(reinterpret_cast<__m256i*>(q + 8), _mm256_add_epi32(cd, channel));
    const __m128 v0 = _mm_setr_ps(table[q[0]], table[q[1]], table[q[2]], table[q[4]]);
    const __m128 v1 = _mm_setr_ps(table[q[5]], table[q[6]], table[q[8]], table[q[9]]);
    const __m128 v2 = _mm_setr_ps(table[q[10]], table[q[12]], table[q[13]], table[q[14]]);
    float* out = dst + k * 3;
    if (stream) {
      _mm_stream_ps(out, v0);
      _mm_stream_ps(out + 4, v1);
      _mm_stream_ps(out + 8, v2);
    } else {
      _mm_storeu_ps(out, v0);
      _mm_storeu_ps(out + 4, v1);
      _mm_storeu_ps(out + 8, v2);
    }
  }
  for (; k < out_w; ++k) {
    LerpNormalizePixel3(row + offsets[k], weights[k], table, dst + k * 3);
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

// Returns whether it wrote `dst` with non-temporal stores (only when `stream` and dst is 16-byte
// aligned); the caller copies (or streams) the row itself otherwise.
bool LerpNormalizeRow3(const float* row, const int32_t* offsets, const float* weights,
                       int64_t out_w, const float* table, float* dst, bool stream) {
#if SLUICE_RESIZE_AVX2
  if (HasAvx2()) {
    stream = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
    LerpNormalizeRow3Avx2(row, offsets, weights, out_w, table, dst, stream);
    return stream;
  }
#endif
  LerpNormalizeRow3Portable(row, offsets, weights, out_w, table, dst);
  return false;
}

// Writes output row `oy` from its float values: rounded to T, or (normalizing a uint8 image) the
// rounded uint8 value looked up in the table; pixels in reverse order when flipping.
template <typename T>
struct RowWriter {
  void* out;
  int64_t out_w;
  int channels;
  bool flip;
  const NormalizeTable* table;
  std::vector<uint8_t>& rounded;  // scratch: one row, when normalizing
  // Streaming: rows are made in `staging` (one row of the output type) and copied out with
  // StreamCopy.
  std::vector<char>* staging;

  // The fused path for 3-channel rows normalized through the table: `row` is the vertically
  // blended row, pixel o lerps row[offsets[o]..] with weights[o] (already reversed to flip).
  void Lerped3(int64_t oy, const float* row, const int32_t* offsets, const float* weights) const {
    const size_t n = static_cast<size_t>(out_w) * 3;
    float* dst = static_cast<float*>(out) + static_cast<size_t>(oy) * n;
    if (staging == nullptr) {
      LerpNormalizeRow3(row, offsets, weights, out_w, table->at(0), dst, false);
      return;
    }
    if (LerpNormalizeRow3(row, offsets, weights, out_w, table->at(0), dst, true)) return;
    // Not streamed (no AVX2, or dst is not aligned): stage the row and stream it out.
    float* staged = reinterpret_cast<float*>(staging->data());
    LerpNormalizeRow3(row, offsets, weights, out_w, table->at(0), staged, false);
    StreamCopy(dst, staged, n * sizeof(float));
  }

  void operator()(int64_t oy, const float* row) const {
    const size_t n = static_cast<size_t>(out_w) * channels;
    if (staging == nullptr) return Write(static_cast<char*>(out), oy, row);
    Write(staging->data(), 0, row);
    const size_t bytes = n * (table != nullptr ? sizeof(float) : sizeof(T));
    StreamCopy(static_cast<char*>(out) + static_cast<size_t>(oy) * bytes, staging->data(), bytes);
  }

  // Writes row `oy` of an image at `image`.
  void Write(char* image, int64_t oy, const float* row) const {
    const size_t n = static_cast<size_t>(out_w) * channels;
    if (table == nullptr) {
      T* dst = reinterpret_cast<T*>(image) + static_cast<size_t>(oy) * n;
      if (!flip) return StoreRow(row, n, dst);
      for (int64_t o = 0; o < out_w; ++o) {
        T* d = dst + static_cast<size_t>(out_w - 1 - o) * channels;
        for (int c = 0; c < channels; ++c) d[c] = Store<T>(row[o * channels + c]);
      }
      return;
    }
    // Rounding is vectorised (StoreRow); the lookups that follow are not.
    uint8_t* q = rounded.data();
    StoreRow(row, n, q);
    float* dst = reinterpret_cast<float*>(image) + static_cast<size_t>(oy) * n;
    // Pixel o goes to d0 + o * step.
    const int64_t step = flip ? -channels : channels;
    float* d0 = flip ? dst + static_cast<size_t>(out_w - 1) * channels : dst;
    if (channels == 3) {
      const float* t0 = table->at(0);
      const float* t1 = table->at(1);
      const float* t2 = table->at(2);
      for (int64_t o = 0; o < out_w; ++o) {
        const uint8_t* p = q + o * 3;
        float* d = d0 + o * step;
        d[0] = t0[p[0]];
        d[1] = t1[p[1]];
        d[2] = t2[p[2]];
      }
      return;
    }
    for (int64_t o = 0; o < out_w; ++o) {
      float* d = d0 + o * step;
      for (int c = 0; c < channels; ++c) d[c] = table->at(c)[q[o * channels + c]];
    }
  }
};

// Bilinear, vertical pass first: each output row blends its two input rows over the columns the
// horizontal taps read (contiguous: the compiler vectorises it), then lerps each output pixel
// from that float row, all its channels at once (a 3-channel pixel is lerped as 4 floats whose
// 4th lane the next pixel overwrites), and finally rounds the row to the output type.
template <typename T, int kC, typename Writer>
void ResizeLinear(const T* in, int64_t in_h, int64_t in_w, int channels, const ResizeRegion& r,
                  int64_t out_h, int64_t out_w, const Writer& write) {
  const int c_count = kC > 0 ? kC : channels;
  const LinearTaps ty = MakeLinearTaps(r.y, r.height, in_h, out_h);
  const LinearTaps tx = MakeLinearTaps(r.x, r.width, in_w, out_w);
  // A one-pixel-wide input has no second tap: read the first one twice.
  std::vector<T> padded;
  if (in_w == 1) {
    padded.resize(static_cast<size_t>(in_h) * 2 * channels);
    for (int64_t y = 0; y < in_h; ++y) {
      for (int c = 0; c < channels; ++c) {
        padded[(y * 2) * channels + c] = padded[(y * 2 + 1) * channels + c] = in[y * channels + c];
      }
    }
    in = padded.data();
    in_w = 2;
  }
  const size_t stride = static_cast<size_t>(in_w) * channels;
  const size_t row_len = static_cast<size_t>(out_w) * channels;
  // Taps are non-decreasing, and each reads first and first + 1.
  const int64_t x_begin = tx.first.front();
  const size_t blend_len = static_cast<size_t>(tx.first.back() + 2 - x_begin) * channels;
  // One float of padding after each row for the 4-wide access to 3-channel pixels.
  std::vector<float> blended(blend_len + 1, 0.0f), lerped(row_len + 1, 0.0f);
  float* row = blended.data();
  float* h = lerped.data();
  std::vector<int32_t> offsets(out_w);
  for (int64_t o = 0; o < out_w; ++o) {
    offsets[o] = static_cast<int32_t>((tx.first[o] - x_begin) * c_count);
  }
  // Normalizing 3 channels: one fused pass per row writes the final floats in output order.
  constexpr bool kCanFuse = std::is_same_v<T, uint8_t> && kC == 3;
  const bool fused = kCanFuse && write.table != nullptr;
  std::vector<int32_t> fused_offsets;
  std::vector<float> fused_weights;
  if (fused) {
    fused_offsets = offsets;
    fused_weights = tx.weight;
    if (write.flip) {
      std::reverse(fused_offsets.begin(), fused_offsets.end());
      std::reverse(fused_weights.begin(), fused_weights.end());
    }
  }
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const int64_t y0 = ty.first[oy];
    const int64_t y1 = std::min(y0 + 1, in_h - 1);
    const float wy = ty.weight[oy];
    const T* a = in + static_cast<size_t>(y0) * stride + static_cast<size_t>(x_begin) * channels;
    const T* b = in + static_cast<size_t>(y1) * stride + static_cast<size_t>(x_begin) * channels;
    BlendRows(a, b, wy, blend_len, row);
    if constexpr (kCanFuse) {
      if (fused) {
        write.Lerped3(oy, row, fused_offsets.data(), fused_weights.data());
        continue;
      }
    }
    if constexpr (kC == 3 || kC == 4) {
      for (int64_t o = 0; o < out_w; ++o) {
        const float* p = row + offsets[o];
        const Float4 left = Load4(p), right = Load4(p + kC);
        const Float4 v = left + tx.weight[o] * (right - left);
        std::memcpy(h + o * kC, &v, sizeof(v));
      }
    } else {
      for (int64_t o = 0; o < out_w; ++o) {
        const float* p = row + offsets[o];
        const float w = tx.weight[o];
        for (int c = 0; c < c_count; ++c) h[o * c_count + c] = p[c] + w * (p[c + c_count] - p[c]);
      }
    }
    write(oy, h);
  }
}

template <typename T, typename Writer>
void ResizeArea(const T* in, int64_t in_h, int64_t in_w, int channels, const ResizeRegion& r,
                int64_t out_h, int64_t out_w, const Writer& write) {
  const AreaTaps ty = MakeAreaTaps(r.y, r.height, in_h, out_h);
  const AreaTaps tx = MakeAreaTaps(r.x, r.width, in_w, out_w);
  const size_t stride = static_cast<size_t>(in_w) * channels;
  const size_t row_len = static_cast<size_t>(out_w) * channels;
  const int64_t y_begin = ty.first.front();
  const int64_t y_end = ty.first.back() + ty.taps;
  // Horizontal pass over the rows the region uses, then the vertical one.
  std::vector<float> rows(static_cast<size_t>(y_end - y_begin) * row_len);
  for (int64_t y = y_begin; y < y_end; ++y) {
    const T* src = in + static_cast<size_t>(y) * stride;
    float* dst = rows.data() + static_cast<size_t>(y - y_begin) * row_len;
    for (int64_t o = 0; o < out_w; ++o) {
      const T* p = src + static_cast<size_t>(tx.first[o]) * channels;
      const float* w = tx.weights.data() + o * tx.taps;
      for (int c = 0; c < channels; ++c) {
        float acc = 0;
        for (int k = 0; k < tx.taps; ++k) acc += w[k] * static_cast<float>(p[k * channels + c]);
        dst[o * channels + c] = acc;
      }
    }
  }
  std::vector<float> acc(row_len);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    const float* w = ty.weights.data() + oy * ty.taps;
    for (int k = 0; k < ty.taps; ++k) {
      const float* src = rows.data() + static_cast<size_t>(ty.first[oy] + k - y_begin) * row_len;
      for (size_t i = 0; i < row_len; ++i) acc[i] += w[k] * src[i];
    }
    write(oy, acc.data());
  }
}

// Resizes into `out`, whose values are TOut: T itself, or float32 for a uint8 image resized as
// tf.image.resize does (unrounded).
template <typename T, typename TOut>
void DispatchTo(const Tensor& image, const ResizeRegion& r, int64_t out_h, int64_t out_w,
                ResizeMethod method, const ResizeOutput& output, Tensor& out) {
  const T* in = image.data<T>();
  const int64_t h = image.dim(0), w = image.dim(1);
  const int c = static_cast<int>(image.dim(2));
  std::vector<uint8_t> rounded(output.normalize != nullptr ? static_cast<size_t>(out_w) * c : 0);
  std::vector<char> staging(output.streaming_stores ? out.byte_size() / out_h : 0);
  const RowWriter<TOut> dst{out.raw_data(),
                            out_w,
                            c,
                            output.flip_left_right,
                            output.normalize,
                            rounded,
                            output.streaming_stores ? &staging : nullptr};
  if (method == ResizeMethod::kArea) return ResizeArea<T>(in, h, w, c, r, out_h, out_w, dst);
  switch (c) {
    case 1:
      return ResizeLinear<T, 1>(in, h, w, c, r, out_h, out_w, dst);
    case 3:
      return ResizeLinear<T, 3>(in, h, w, c, r, out_h, out_w, dst);
    case 4:
      return ResizeLinear<T, 4>(in, h, w, c, r, out_h, out_w, dst);
    default:
      return ResizeLinear<T, 0>(in, h, w, c, r, out_h, out_w, dst);
  }
}

}  // namespace

std::string ResizeRegion::DebugString() const {
  return absl::StrCat("[y=", y, ", x=", x, ", height=", height, ", width=", width, "]");
}

absl::StatusOr<Tensor> Resize(const Tensor& image, int64_t out_h, int64_t out_w,
                              ResizeMethod method) {
  if (image.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("Resize: expected a [height, width, channels] image, got shape ",
                     image.shape().DebugString()));
  }
  return Resize(image,
                ResizeRegion{.y = 0,
                             .x = 0,
                             .height = static_cast<double>(image.dim(0)),
                             .width = static_cast<double>(image.dim(1))},
                out_h, out_w, method);
}

absl::StatusOr<Tensor> Resize(const Tensor& image, const ResizeRegion& region, int64_t out_h,
                              int64_t out_w, ResizeMethod method) {
  return Resize(image, region, out_h, out_w, method, ResizeOutput{.round_to_uint8 = false});
}

absl::StatusOr<Tensor> Resize(const Tensor& image, const ResizeRegion& region, int64_t out_h,
                              int64_t out_w, ResizeMethod method, const ResizeOutput& output) {
  if (image.rank() != 3 || (image.dtype() != DType::kUint8 && image.dtype() != DType::kFloat32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Resize: expected a uint8 or float32 [height, width, channels] image, got ",
                     DTypeName(image.dtype()), image.shape().DebugString()));
  }
  const int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  if (h <= 0 || w <= 0 || c <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Resize: empty image ", image.shape().DebugString()));
  }
  if (out_h <= 0 || out_w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Resize: output size must be positive, got ", out_h, "x", out_w));
  }
  // Slack for regions computed in floating point (a window divided by a DCT scale).
  constexpr double kSlack = 1e-9;
  const ResizeRegion& r = region;
  if (!(r.height > 0) || !(r.width > 0) || !(r.y >= -kSlack) || !(r.x >= -kSlack) ||
      !(r.y + r.height <= static_cast<double>(h) + kSlack) ||
      !(r.x + r.width <= static_cast<double>(w) + kSlack)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Resize: region ", r.DebugString(), " is empty or not inside the ", h, "x", w, " image"));
  }
  if (output.normalize != nullptr &&
      (image.dtype() != DType::kUint8 || output.normalize->channels() != c)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Resize: normalizing needs a uint8 image with the table's ", output.normalize->channels(),
        " channels, got ", DTypeName(image.dtype()), image.shape().DebugString()));
  }
  const bool to_uint8 =
      image.dtype() == DType::kUint8 && output.round_to_uint8 && output.normalize == nullptr;
  const DType out_dtype = to_uint8 ? DType::kUint8 : DType::kFloat32;
  Shape out_shape{out_h, out_w, c};
  if (output.destination != nullptr &&
      (output.destination->dtype() != out_dtype || output.destination->shape() != out_shape)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Resize: the destination is ", DTypeName(output.destination->dtype()),
                     output.destination->shape().DebugString(), ", expected ", DTypeName(out_dtype),
                     out_shape.DebugString()));
  }
  Tensor out =
      output.destination != nullptr ? *output.destination : Tensor(out_dtype, std::move(out_shape));
  if (image.dtype() == DType::kFloat32) {
    DispatchTo<float, float>(image, r, out_h, out_w, method, output, out);
  } else if (to_uint8 || output.normalize != nullptr) {
    // Normalizing looks the rounded uint8 values up in its table (RowWriter<uint8_t>).
    DispatchTo<uint8_t, uint8_t>(image, r, out_h, out_w, method, output, out);
  } else {
    DispatchTo<uint8_t, float>(image, r, out_h, out_w, method, output, out);
  }
  if (output.streaming_stores) StreamFence();
  return out;
}

}  // namespace sluice
