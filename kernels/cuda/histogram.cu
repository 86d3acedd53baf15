// Histograms with privatised shared-memory sub-histograms.
//
// hist_kernel (32-bit counters): integer values (VALUE_BYTES = 4: int32, 1: uint8) into bins [lo, lo + BINS)
// of a histogram of total_bins (several launches, "passes", cover more bins than fit in shared memory).
// Each block keeps REPLICAS copies of its BINS counters. Who shares a copy is PRIV:
//   PRIV 0: warp w updates replica w % REPLICAS, so warps of one block that hit the same hot bin use
//           different words;
//   PRIV 1: lane l updates replica l % REPLICAS (every warp of the block shares the copies). With 32
//           interleaved replicas (bin b's replicas at words 32b .. 32b+31) lane l always lands in bank l:
//           each update instruction is one wavefront whatever the data (uniform, one hot bin, sorted),
//           at 128 bytes of shared memory per bin.
//   PRIV 2: each thread its own 8-bit counters, no atomics (hist8_kernel, below).
// Replica-major puts replica r at r*(BINS+PAD); interleaved puts bin b's replicas side by side at
// b*(REPLICAS+PAD). Values are read 16 bytes per thread per load (ITEMS loads in flight), a persistent
// grid-stride loop, then each block adds its bins (summed over replicas) into the global histogram with one
// atomic per non-zero bin.
// Updates (one atom.shared.add.u32 per lane) are warp-aggregated when AGG says so:
//   AGG 0: none; every lane with a bin in range adds 1. atomicAdd(&h[b], 1u) compiles to ATOMS.POPC.INC,
//          which serves the lanes that share an address once (measured: equal values bin as fast as
//          uniform ones on the H200);
//   AGG 1: __match_any_sync groups lanes with equal bins; each group's leader adds the group's popcount;
//   AGG 2: cheap uniform test: if all 32 lanes hold the same bin, lane 0 adds 32, else AGG 0.
//
// hist16_kernel (16-bit counters): up to 65,536 bins in ONE pass in 128 KB. Bin b's counter is half b & 1
// of word b >> 1 (WORDS16 = BINS / 2 words): an even bin adds 1 to its word, an odd bin 0x10000.
// Overflow: a 16-bit counter must never pass 65,535 (the low half would carry into its neighbour, the high
// half out of the word). Every SCAN_EVERY grid-stride
// iterations the block stops and moves every counter >= SPILL_AT into the global histogram (a global atomic,
// then the counter restarts at 0), so after a scan every counter is < SPILL_AT; between two scans a block
// adds at most SCAN_EVERY * THREADS * ITEMS * PER values plus the < PER tail values, which SCAN_EVERY keeps
// <= 65,535 - (SPILL_AT - 1): no counter can overflow (uniform data never spills: 2^26 values on 132 blocks
// put ~8 in each of 65,536 bins). At the end each block writes its 16-bit counters to its row of a global
// workspace (coalesced 16-byte stores) and hist16_reduce adds the rows (blocks x BINS x 2 bytes: 17 MB for
// 132 blocks and 65,536 bins, where the same flush by global atomics would be 8.6M atomics).
//   AGG 0: one ATOMS.ADD of 1 or 0x10000 per value (lanes on one word serialise);
//   AGG 2: a uniform warp adds 32 with one lane, else AGG 0;
//   AGG 3: runs of equal bins in consecutive lanes (sorted input: a warp holds one or two runs) are counted
//          by their first lane, which adds the run's length (one ATOMS.ADD per run); costs a shuffle, a
//          ballot and a few integer operations per value;
//   AGG 4: even bins by ATOMS.POPC.INC (equal lanes served once: a hot even bin costs one wavefront), odd
//          bins by ATOMS.ADD, two instructions per value.
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
#ifndef PRIV
#define PRIV 0
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

// the < PER values after the last whole vector (block 0, warp 0 only), as a bin relative to lo or -1
__device__ __forceinline__ int ap_tail_bin(const void* in, long long n, long long nvec, int lane, int lo,
                                           int total_bins) {
    const long long i = nvec * PER + lane;
    if (i >= n) return -1;
#if VALUE_BYTES == 4
    const int x = reinterpret_cast<const int*>(in)[i];
#else
    const int x = reinterpret_cast<const unsigned char*>(in)[i];
#endif
    return (x >= 0 && x < total_bins && (unsigned)(x - lo) < (unsigned)BINS) ? x - lo : -1;
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
    const int tid = threadIdx.x, lane = tid & 31;
#if PRIV == 1
    const int rep = lane % REPLICAS;
#else
    const int rep = (tid >> 5) % REPLICAS;
#endif
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
    if (blockIdx.x == 0 && tid < 32) ap_update(h, rep, ap_tail_bin(in, n, nvec, lane, lo, total_bins), lane);
    __syncthreads();
#if PRIV == 1
    // warp-cooperative flush: lane r reads replica r of bin b (interleaved: 32 consecutive words, no
    // conflict), a shuffle tree sums them, lane 0 adds the bin to the global histogram
    for (int b = tid >> 5; b < BINS && lo + b < total_bins; b += THREADS / 32) {
        ap_u32 s = lane < REPLICAS ? h[HOFF(lane, b)] : 0u;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL, s, o);
        if (lane == 0 && s) atomicAdd(&out[lo + b], s);
    }
#else
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS) {
        ap_u32 s = 0;
#pragma unroll
        for (int r = 0; r < REPLICAS; ++r) s += h[HOFF(r, b)];
        if (s) atomicAdd(&out[lo + b], s);
    }
#endif
}

// ---- per-thread 8-bit counters (PRIV 2) -----------------------------------------------------------------
// Thread t's counter of bin b is byte b % 4 of word (b / 4) * THREADS + t (THREADS is a multiple of 32, so
// lane t always lands in bank t % 32): a plain load, add and store, conflict-free and with no atomic,
// because no other thread touches the word. A byte holds 255: every FLUSH_EVERY grid-stride iterations
// (at most 254 values a thread, and the tail adds at most one) the block stops and warp w sums rows
// w, w + WARPS, ... of the counters into hb, a 32-bit block histogram after them, zeroing them as it goes.
// The sum of one row over the threads is done on two 16-bit lanes of a word (bytes 0 and 2, 1 and 3: each
// lane's share is at most 255 * THREADS / 32 <= 8160), then split and reduced across the warp by shuffles.
#define H8_WORDS (BINS / 4 * THREADS)
#define FLUSH_EVERY (254 / (ITEMS * PER))

__device__ __forceinline__ void ap_flush8(ap_u32* h, ap_u32* hb, int tid) {
    const int lane = tid & 31;
    for (int j = tid >> 5; j < BINS / 4; j += THREADS / 32) {  // one row per warp at a time
        ap_u32 e = 0, o = 0;
        for (int t = lane; t < THREADS; t += 32) {
            const ap_u32 v = h[j * THREADS + t];
            h[j * THREADS + t] = 0;
            e += v & 0x00ff00ffu;
            o += (v >> 8) & 0x00ff00ffu;
        }
        ap_u32 c[4] = {e & 0xffffu, o & 0xffffu, e >> 16, o >> 16};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#pragma unroll
            for (int s = 16; s > 0; s >>= 1) c[k] += __shfl_xor_sync(FULL, c[k], s);
        }
        if (lane == 0) {
#pragma unroll
            for (int k = 0; k < 4; ++k) hb[4 * j + k] += c[k];  // row j is this warp's alone
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
hist8_kernel(ap_u32* __restrict__ out, const void* __restrict__ in, long long n, int lo, int total_bins) {
    static_assert(FLUSH_EVERY >= 1 && THREADS % 32 == 0 && BINS % 4 == 0, "per-thread byte counters");
    extern __shared__ __align__(16) ap_u32 h[];
    ap_u32* hb = h + H8_WORDS;
    const int tid = threadIdx.x, lane = tid & 31;
    for (int i = tid; i < H8_WORDS + BINS; i += THREADS) h[i] = 0;
    __syncthreads();

    const u4* vin = reinterpret_cast<const u4*>(in);
    const long long nvec = n / PER;
    const long long step = (long long)gridDim.x * THREADS * ITEMS;
    int since = 0;  // iterations since the last flush: the same in every thread of the block
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
            for (int j = 0; j < PER; ++j) {
                const int b = ap_bin(v[it], j, ok[it], lo, total_bins);
                if (b >= 0) h[(b >> 2) * THREADS + tid] += 1u << ((b & 3) * 8);
            }
        if (++since == FLUSH_EVERY) {
            since = 0;
            __syncthreads();
            ap_flush8(h, hb, tid);
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && tid < 32) {
        const int b = ap_tail_bin(in, n, nvec, lane, lo, total_bins);
        if (b >= 0) h[(b >> 2) * THREADS + tid] += 1u << ((b & 3) * 8);
    }
    __syncthreads();
    ap_flush8(h, hb, tid);
    __syncthreads();
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS)
        if (hb[b]) atomicAdd(&out[lo + b], hb[b]);
}

// ---- 16-bit counters, one pass --------------------------------------------------------------------------
#define WORDS16 (BINS / 2)
#ifndef SPILL_AT
#define SPILL_AT 4096
#endif
// grid-stride iterations between two overflow scans (see the header): at most 65,536 - SPILL_AT - PER
// values per block between scans, tail included
#define SCAN_EVERY ((65536 - SPILL_AT - PER) / (THREADS * ITEMS * PER))

// +1 / +0x10000 on a shared word through PTX red, kept as two instructions: written as two predicated
// atomicAdds the compiler merges them into one ATOMS.ADD of a selected value (seen in the SASS), which loses
// ATOMS.POPC.INC's aggregation of the even bins' equal lanes
__device__ __forceinline__ void ap_red_inc_lo(ap_u32* p) {
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
}
__device__ __forceinline__ void ap_red_inc_hi(ap_u32* p) {
    asm volatile("red.shared.add.u32 [%0], 65536;" ::"r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
}

__device__ __forceinline__ void ap_update16(ap_u32* h, int b, int lane) {
#if AGG == 3
    const int prev = __shfl_up_sync(FULL, b, 1);
    const bool lead = lane == 0 || b != prev;
    const unsigned after = __ballot_sync(FULL, lead) & (0xfffffffeu << lane);  // run starts above lane
    const int next = after ? __ffs(after) - 1 : 32;
    if (lead && b >= 0) atomicAdd(&h[b >> 1], (ap_u32)(next - lane) << ((b & 1) * 16));
#else
#if AGG == 2
    const int b0 = __shfl_sync(FULL, b, 0);
    if (__all_sync(FULL, b == b0)) {
        if (b >= 0 && lane == 0) atomicAdd(&h[b >> 1], 32u << ((b & 1) * 16));
        return;
    }
#endif
#if AGG == 4
    if (b >= 0 && !(b & 1)) ap_red_inc_lo(&h[b >> 1]);  // low half: ATOMS.POPC.INC, equal lanes once
    if (b >= 0 && (b & 1)) ap_red_inc_hi(&h[b >> 1]);   // high half: ATOMS.ADD, every lane counts
#else
    if (b >= 0) atomicAdd(&h[b >> 1], 1u << ((b & 1) * 16));  // one ATOMS.ADD: every lane counts
#endif
#endif
}

// every counter >= SPILL_AT goes to the global histogram and restarts at 0 (between two __syncthreads)
__device__ __forceinline__ void ap_spill16(ap_u32* h, ap_u32* out, int total_bins, int tid) {
    for (int i = tid; i < WORDS16; i += THREADS) {
        const ap_u32 w = h[i];
        const ap_u32 lo16 = w & 0xffffu, hi16 = w >> 16;
        if (lo16 >= SPILL_AT || hi16 >= SPILL_AT) {
            ap_u32 keep = w;
            if (lo16 >= SPILL_AT) {
                atomicAdd(&out[2 * i], lo16);
                keep &= 0xffff0000u;
            }
            if (hi16 >= SPILL_AT) {
                atomicAdd(&out[2 * i + 1], hi16);
                keep &= 0xffffu;
            }
            h[i] = keep;
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
hist16_kernel(ap_u32* __restrict__ out, ap_u32* __restrict__ ws, const void* __restrict__ in, long long n,
              int total_bins) {
    static_assert(SCAN_EVERY >= 1, "a block iteration must not add more values than a 16-bit counter holds");
    extern __shared__ __align__(16) ap_u32 h[];
    const int tid = threadIdx.x, lane = tid & 31;
    u4* h4 = reinterpret_cast<u4*>(h);
    for (int i = tid; i < WORDS16 / 4; i += THREADS) h4[i] = u4{0u, 0u, 0u, 0u};
    __syncthreads();

    const u4* vin = reinterpret_cast<const u4*>(in);
    const long long nvec = n / PER;
    const long long step = (long long)gridDim.x * THREADS * ITEMS;
    int since = 0;  // iterations since the last scan: the same in every thread of the block
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
            for (int j = 0; j < PER; ++j) ap_update16(h, ap_bin(v[it], j, ok[it], 0, total_bins), lane);
        if (++since == SCAN_EVERY) {
            since = 0;
            __syncthreads();
            ap_spill16(h, out, total_bins, tid);
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && tid < 32) ap_update16(h, ap_tail_bin(in, n, nvec, lane, 0, total_bins), lane);
    __syncthreads();
    u4* row = reinterpret_cast<u4*>(ws + (long long)blockIdx.x * WORDS16);
    for (int i = tid; i < WORDS16 / 4; i += THREADS) row[i] = h4[i];
}

// out[b] += the sum over the workspace's rows (one per block of hist16_kernel) of 16-bit counter b; one
// thread per word (two bins), blockIdx.y strides over the rows and adds its partial sums atomically
extern "C" __global__ void __launch_bounds__(256)
hist16_reduce(ap_u32* __restrict__ out, const ap_u32* __restrict__ ws, int rows, int total_bins) {
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (2 * i >= total_bins) return;
    ap_u32 a = 0, b = 0;
#pragma unroll 4
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const ap_u32 w = ws[(long long)r * WORDS16 + i];
        a += w & 0xffffu;
        b += w >> 16;
    }
    if (a) atomicAdd(&out[2 * i], a);
    if (b && 2 * i + 1 < total_bins) atomicAdd(&out[2 * i + 1], b);
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
