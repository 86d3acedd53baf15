// Histograms with privatised shared-memory sub-histograms.
//
// hist_kernel: integer values (VALUE_BYTES = 4: int32, 1: uint8) into bins [lo, lo + BINS) of a
// histogram of total_bins (several launches, "passes", cover more bins than fit in shared memory). Each
// block keeps REPLICAS copies of its BINS counters; warp w updates replica w % REPLICAS, so warps of one
// block that hit the same hot bin use different words. Replica-major puts replica r at r*(BINS+PAD);
// interleaved puts bin b's replicas side by side at b*(REPLICAS+PAD). Values are read 16 bytes per thread
// per load (ITEMS loads in flight), a persistent grid-stride loop, then each block adds its bins (summed
// over replicas) into the global histogram with one atomic per non-zero bin.
// Updates (one atom.shared.add.u32 per lane) are warp-aggregated when AGG says so:
//   AGG 0: none; every lane with a bin in range adds 1 (32 lanes on one bin = 32 serialised wavefronts);
//   AGG 1: __match_any_sync groups lanes with equal bins; each group's leader adds the group's popcount;
//   AGG 2: cheap uniform test: if all 32 lanes hold the same bin, lane 0 adds 32, else AGG 0.
//
// whist_kernel: weighted histogram, a count (u32) and a sum (f32) per bin; int32 values, fp32 weights.
// The (count, sum) pair is stored as array-of-structs (count at b*W_STRIDE, sum 4 bytes after it) or
// struct-of-arrays (counts at 4b, sums at W_BASE1 + 4b): W_AOS, W_STRIDE, W_BASE1 in bytes, from
// autopad.layouts.Structs. AGG 2 reduces a uniform warp's weights with shuffles before one update.
#include "common.cuh"

#ifndef VALUE_BYTES
#define VALUE_BYTES 4
#endif
#ifndef BINS
#define BINS 256
#endif
#ifndef REPLICAS
#define REPLICAS 1
#endif
#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 2
#endif
#ifndef AGG
#define AGG 2
#endif
#ifndef W_AOS
#define W_AOS 1
#endif
#ifndef W_STRIDE
#define W_STRIDE 8
#endif
#ifndef W_BASE1
#define W_BASE1 (BINS * 4)
#endif

#if INTERLEAVED
#define HOFF(r, b) ((b) * (REPLICAS + PAD) + (r))
#define H_WORDS (BINS * (REPLICAS + PAD))
#else
#define HOFF(r, b) ((r) * (BINS + PAD) + (b))
#define H_WORDS (REPLICAS * (BINS + PAD))
#endif

#define PER (16 / VALUE_BYTES)  // values per 16-byte load
#define FULL 0xffffffffu

struct __align__(16) u4 { ap_u32 x, y, z, w; };
struct __align__(16) f4w { float x, y, z, w; };

// one lane's value j of a 16-byte vector, as a bin relative to lo (or -1: no update)
__device__ __forceinline__ int ap_bin(const u4& v, int j, bool valid, int lo, int total_bins) {
    const ap_u32 w[4] = {v.x, v.y, v.z, v.w};
#if VALUE_BYTES == 4
    const int x = (int)w[j];
#else
    const int x = (int)((w[j / 4] >> (8 * (j % 4))) & 0xffu);
#endif
    const int b = x - lo;
    return (valid && x >= 0 && x < total_bins && (unsigned)b < (unsigned)BINS) ? b : -1;
}

// one warp-wide update instruction; every lane of the warp calls it (converged)
__device__ __forceinline__ void ap_update(ap_u32* h, int rep, int b, int lane) {
#if AGG == 1
    const unsigned peers = __match_any_sync(FULL, b);
    if (b >= 0 && lane == __ffs(peers) - 1) atomicAdd(&h[HOFF(rep, b)], (ap_u32)__popc(peers));
#elif AGG == 2
    const int b0 = __shfl_sync(FULL, b, 0);
    if (__all_sync(FULL, b == b0)) {
        if (b >= 0 && lane == 0) atomicAdd(&h[HOFF(rep, b)], 32u);
    } else if (b >= 0) {
        atomicAdd(&h[HOFF(rep, b)], 1u);
    }
#else
    if (b >= 0) atomicAdd(&h[HOFF(rep, b)], 1u);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
hist_kernel(ap_u32* __restrict__ out, const void* __restrict__ in, long long n, int lo, int total_bins) {
    extern __shared__ __align__(16) ap_u32 h[];
    const int tid = threadIdx.x, lane = tid & 31, rep = (tid >> 5) % REPLICAS;
    for (int i = tid; i < H_WORDS; i += THREADS) h[i] = 0;
    __syncthreads();

    const u4* vin = reinterpret_cast<const u4*>(in);
    const long long nvec = n / PER;
    const long long step = (long long)gridDim.x * THREADS * ITEMS;
    for (long long base = (long long)blockIdx.x * THREADS * ITEMS; base < nvec; base += step) {
        u4 v[ITEMS];
        bool ok[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const long long idx = base + it * THREADS + tid;
            ok[it] = idx < nvec;
            if (ok[it]) v[it] = vin[idx];
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it)
#pragma unroll
            for (int j = 0; j < PER; ++j) ap_update(h, rep, ap_bin(v[it], j, ok[it], lo, total_bins), lane);
    }
    if (blockIdx.x == 0 && tid < 32) {  // the < PER values after the last whole vector: one warp
        const long long i = nvec * PER + lane;
        int b = -1;
        if (i < n) {
#if VALUE_BYTES == 4
            const int x = reinterpret_cast<const int*>(in)[i];
#else
            const int x = reinterpret_cast<const unsigned char*>(in)[i];
#endif
            if (x >= 0 && x < total_bins && (unsigned)(x - lo) < (unsigned)BINS) b = x - lo;
        }
        ap_update(h, rep, b, lane);
    }
    __syncthreads();
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS) {
        ap_u32 s = 0;
#pragma unroll
        for (int r = 0; r < REPLICAS; ++r) s += h[HOFF(r, b)];
        if (s) atomicAdd(&out[lo + b], s);
    }
}

// ---- weighted: count and sum per bin, AoS or SoA -------------------------------------------------------
#define W_COFF(b) (W_AOS ? (b) * W_STRIDE : (b) * 4)
#define W_SOFF(b) (W_AOS ? (b) * W_STRIDE + 4 : W_BASE1 + (b) * 4)
#define W_BYTES (W_AOS ? BINS * W_STRIDE : W_BASE1 + BINS * 4)

__device__ __forceinline__ void ap_wupdate(unsigned char* sm, int b, float w, int lane) {
#if AGG == 2
    const int b0 = __shfl_sync(FULL, b, 0);
    if (__all_sync(FULL, b == b0)) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(FULL, w, o);
        if (b >= 0 && lane == 0) {
            atomicAdd(reinterpret_cast<ap_u32*>(sm + W_COFF(b)), 32u);
            atomicAdd(reinterpret_cast<float*>(sm + W_SOFF(b)), w);
        }
        return;
    }
#endif
    if (b >= 0) {
        atomicAdd(reinterpret_cast<ap_u32*>(sm + W_COFF(b)), 1u);
        atomicAdd(reinterpret_cast<float*>(sm + W_SOFF(b)), w);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
whist_kernel(ap_u32* __restrict__ counts, float* __restrict__ sums, const int* __restrict__ in,
             const float* __restrict__ wts, long long n, int lo, int total_bins) {
    extern __shared__ __align__(16) unsigned char sm[];
    const int tid = threadIdx.x, lane = tid & 31;
    for (int i = tid; i < W_BYTES / 4; i += THREADS) reinterpret_cast<ap_u32*>(sm)[i] = 0;
    __syncthreads();
    const long long nvec = n / 4;
    const long long step = (long long)gridDim.x * THREADS * ITEMS;
    for (long long base = (long long)blockIdx.x * THREADS * ITEMS; base < nvec; base += step) {
        u4 v[ITEMS];
        f4w w[ITEMS];
        bool ok[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const long long idx = base + it * THREADS + tid;
            ok[it] = idx < nvec;
            if (ok[it]) {
                v[it] = reinterpret_cast<const u4*>(in)[idx];
                w[it] = reinterpret_cast<const f4w*>(wts)[idx];
            }
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const float ww[4] = {w[it].x, w[it].y, w[it].z, w[it].w};
            const ap_u32 vv[4] = {v[it].x, v[it].y, v[it].z, v[it].w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int x = (int)vv[j], b = x - lo;
                const bool in_range = ok[it] && x >= 0 && x < total_bins && (unsigned)b < (unsigned)BINS;
                ap_wupdate(sm, in_range ? b : -1, in_range ? ww[j] : 0.f, lane);
            }
        }
    }
    if (blockIdx.x == 0 && tid < 32) {
        const long long i = nvec * 4 + lane;
        int b = -1;
        float wv = 0.f;
        if (i < n) {
            const int x = in[i];
            if (x >= 0 && x < total_bins && (unsigned)(x - lo) < (unsigned)BINS) {
                b = x - lo;
                wv = wts[i];
            }
        }
        ap_wupdate(sm, b, wv, lane);
    }
    __syncthreads();
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS) {
        const ap_u32 c = *reinterpret_cast<const ap_u32*>(sm + W_COFF(b));
        if (c) {
            atomicAdd(&counts[lo + b], c);
            atomicAdd(&sums[lo + b], *reinterpret_cast<const float*>(sm + W_SOFF(b)));
        }
    }
}
