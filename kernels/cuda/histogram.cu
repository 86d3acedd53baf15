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
//   AGG 0: none; every lane with a bin in range adds 1. A +1 (red.shared.add of 1, see ap_inc) is
//          ATOMS.POPC.INC, which serves the lanes that share an address once (measured: equal values bin
//          as fast as uniform ones on the H200). uint8 values all counted in one pass (256 bins) take a
//          path with no check at all: 3 instructions a value;
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
// W_REPLICAS copies of every record, lane l updating copy l % W_REPLICAS (record b * W_REPLICAS + copy):
// the float add is a compare-and-swap loop whose fast-fail (ATOMS.CAST.SPIN) lets one lane a bank through
// per round, so 32 lanes on random bins take ~3.5 rounds where their bank collisions stack up; with 32
// struct-of-arrays copies lane l always hits bank l (record 32b + l), one round, and lanes on one bin no
// longer meet. The copies are summed once at the end (copy (b + k) % W_REPLICAS at step k: banks spread).
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
#ifndef COUNTER
#define COUNTER 32
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

// A lane's value as a bin relative to lo, and whether it is counted. One unsigned compare against
// limit = min(BINS, total_bins - lo) rejects x < 0, x >= total_bins and bins outside this pass at once.
struct ApBin {
    int b;
    bool p;
};

__device__ __forceinline__ ApBin ap_bin(const u4& v, int j, bool valid, int lo, unsigned limit) {
    const ap_u32 w[4] = {v.x, v.y, v.z, v.w};
#if VALUE_BYTES == 4
    const int x = (int)w[j];
#else
    const int x = (int)__byte_perm(w[j / 4], 0u, 0x4440u + (j % 4));  // byte j % 4, zero-extended: PRMT
#endif
    const int b = x - lo;
    return {b, valid && (unsigned)b < limit};
}

// the < PER values after the last whole vector (block 0, warp 0 only)
__device__ __forceinline__ ApBin ap_tail_bin(const void* in, long long n, long long nvec, int lane, int lo,
                                             unsigned limit) {
    const long long i = nvec * PER + lane;
    int x = 0;
    if (i < n) {
#if VALUE_BYTES == 4
        x = reinterpret_cast<const int*>(in)[i];
#else
        x = reinterpret_cast<const unsigned char*>(in)[i];
#endif
    }
    const int b = x - lo;
    return {b, i < n && (unsigned)b < limit};
}

// Shared-memory increments as one predicated PTX red.shared.add each, on a byte address in the shared
// window. `red.shared.add.u32 [a], 1` becomes ATOMS.POPC.INC (lanes that share an address served once);
// any other increment is ATOMS.ADD. Written as `if (p) atomicAdd(&h[i], 1u)` each value became a branch
// (BSSY/BRA/BSYNC, the window base recomputed): ~15 instructions a value in the SASS, which bounded the
// uint8 kernel by instruction issue (0.40 of the copy's read rate measured), where this is ~4.
__device__ __forceinline__ void ap_inc(unsigned a, bool p) {
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; @q red.shared.add.u32 [%0], 1; }" ::"r"(a),
                 "r"((unsigned)p)
                 : "memory");
}
__device__ __forceinline__ void ap_inc_always(unsigned a) {
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(a) : "memory");
}
__device__ __forceinline__ void ap_inc_hi(unsigned a, bool p) {  // +0x10000: the high 16-bit half
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; @q red.shared.add.u32 [%0], 65536; }" ::"r"(a),
                 "r"((unsigned)p)
                 : "memory");
}
__device__ __forceinline__ void ap_add(unsigned a, unsigned v, bool p) {
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q red.shared.add.u32 [%0], %1; }" ::"r"(a), "r"(v),
                 "r"((unsigned)p)
                 : "memory");
}

// byte offset of replica r's bin 0, and of one bin to the next, in the replicated layout
#if INTERLEAVED
#define HREP(r) (4u * (unsigned)(r))
#define HSTEP (4u * (REPLICAS + PAD))
#else
#define HREP(r) (4u * (unsigned)(r) * (BINS + PAD))
#define HSTEP 4u
#endif

// one warp-wide update instruction; every lane of the warp calls it (converged). hrep: the shared window
// address of this lane's replica's bin 0
__device__ __forceinline__ void ap_update(unsigned hrep, ApBin x, int lane) {
    const unsigned a = hrep + (unsigned)x.b * HSTEP;  // not dereferenced where x.p is false
#if AGG == 1
    const unsigned peers = __match_any_sync(FULL, x.p ? x.b : -1);
    ap_add(a, (unsigned)__popc(peers), x.p && lane == __ffs(peers) - 1);
#elif AGG == 2
    const int key = x.p ? x.b : -1;
    const bool uni = __all_sync(FULL, key == __shfl_sync(FULL, key, 0));
    ap_add(a, 32u, uni && x.p && lane == 0);
    ap_inc(a, !uni && x.p);
#else
    ap_inc(a, x.p);
#endif
}

// out[0 .. bins) = 0, ahead of the passes. It lets the next kernel launch at once (griddepcontrol): that
// kernel, launched with programmatic stream serialization, counts into shared memory meanwhile and waits
// for this one (AP_GRID_WAIT: its completion and its writes) only before it adds to out. Without the
// launch attribute (another launch path, another GPU) the two simply run in stream order.
extern "C" __global__ void __launch_bounds__(256) hist_zero(ap_u32* __restrict__ out, int bins) {
    AP_LAUNCH_DEPENDENTS();
    for (int i = blockIdx.x * 256 + threadIdx.x; i < bins; i += gridDim.x * 256) out[i] = 0u;
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
    const unsigned hrep = (unsigned)__cvta_generic_to_shared(h) + HREP(rep);
    const unsigned limit = (unsigned)min(BINS, total_bins - lo);

    const u4* vin = reinterpret_cast<const u4*>(in);
    const long long nvec = n / PER;
    const long long step = (long long)gridDim.x * THREADS * ITEMS;
#if VALUE_BYTES == 1 && AGG == 0
    const bool every_byte = lo == 0 && limit >= 256u;  // every uint8 value is a bin of this pass
#endif
    for (long long base = (long long)blockIdx.x * THREADS * ITEMS; base < nvec; base += step) {
        u4 v[ITEMS];
        bool ok[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const long long idx = base + it * THREADS + tid;
            ok[it] = idx < nvec;
            if (ok[it]) v[it] = vin[idx];
        }
#if VALUE_BYTES == 1 && AGG == 0
        if (every_byte && ok[ITEMS - 1]) {  // ok[] only turns false with it: all ITEMS vectors are here
            // nothing to check: extract (PRMT), address (one multiply-add), increment: 3 instructions a value
#pragma unroll
            for (int it = 0; it < ITEMS; ++it) {
                const ap_u32 w[4] = {v[it].x, v[it].y, v[it].z, v[it].w};
#pragma unroll
                for (int j = 0; j < PER; ++j)
                    ap_inc_always(hrep + __byte_perm(w[j / 4], 0u, 0x4440u + (j % 4)) * HSTEP);
            }
            continue;
        }
#endif
#pragma unroll
        for (int it = 0; it < ITEMS; ++it)
#pragma unroll
            for (int j = 0; j < PER; ++j) ap_update(hrep, ap_bin(v[it], j, ok[it], lo, limit), lane);
    }
    if (blockIdx.x == 0 && tid < 32) ap_update(hrep, ap_tail_bin(in, n, nvec, lane, lo, limit), lane);
    __syncthreads();
    AP_GRID_WAIT();  // launched overlapping hist_zero (or the pass before): out is ready from here on
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

#if PRIV == 2  // only this build's kernel is compiled: its static checks hold for its constants
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

// thread tid's byte of bin x.b, +1 if counted: branch-free (an uncounted value adds 0 to its word 0)
__device__ __forceinline__ void ap_update8(ap_u32* h, ApBin x, int tid) {
    const int b = x.p ? x.b : 0;
    h[(b >> 2) * THREADS + tid] += x.p ? 1u << ((b & 3) * 8) : 0u;
}

extern "C" __global__ void __launch_bounds__(THREADS)
hist8_kernel(ap_u32* __restrict__ out, const void* __restrict__ in, long long n, int lo, int total_bins) {
    static_assert(FLUSH_EVERY >= 1 && THREADS % 32 == 0 && BINS % 4 == 0, "per-thread byte counters");
    extern __shared__ __align__(16) ap_u32 h[];
    ap_u32* hb = h + H8_WORDS;
    const int tid = threadIdx.x, lane = tid & 31;
    for (int i = tid; i < H8_WORDS + BINS; i += THREADS) h[i] = 0;
    __syncthreads();
    const unsigned limit = (unsigned)min(BINS, total_bins - lo);

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
            for (int j = 0; j < PER; ++j) ap_update8(h, ap_bin(v[it], j, ok[it], lo, limit), tid);
        if (++since == FLUSH_EVERY) {
            since = 0;
            __syncthreads();
            ap_flush8(h, hb, tid);
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && tid < 32) ap_update8(h, ap_tail_bin(in, n, nvec, lane, lo, limit), tid);
    __syncthreads();
    ap_flush8(h, hb, tid);
    __syncthreads();
    AP_GRID_WAIT();
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS)
        if (hb[b]) atomicAdd(&out[lo + b], hb[b]);
}

#endif  // PRIV == 2

#if COUNTER == 16
// ---- 16-bit counters, one pass --------------------------------------------------------------------------
#define WORDS16 (BINS / 2)
#ifndef SPILL_AT
#define SPILL_AT 4096
#endif
// grid-stride iterations between two overflow scans (see the header): at most 65,536 - SPILL_AT - PER
// values per block between scans, tail included
#define SCAN_EVERY ((65536 - SPILL_AT - PER) / (THREADS * ITEMS * PER))

// hs: the shared window address of h; bin b is half b & 1 of word b >> 1
__device__ __forceinline__ void ap_update16(unsigned hs, ApBin x, int lane) {
    const unsigned a = hs + 4u * (unsigned)(x.b >> 1), hi = (unsigned)(x.b & 1);
    const int key = x.p ? x.b : -1;
#if AGG == 3
    const int prev = __shfl_up_sync(FULL, key, 1);
    const bool lead = lane == 0 || key != prev;
    const unsigned after = __ballot_sync(FULL, lead) & (0xfffffffeu << lane);  // run starts above lane
    const int next = after ? __ffs(after) - 1 : 32;
    ap_add(a, (unsigned)(next - lane) << (hi * 16), lead && x.p);
#else
#if AGG == 2
    const bool uni = __all_sync(FULL, key == __shfl_sync(FULL, key, 0));
    ap_add(a, 32u << (hi * 16), uni && x.p && lane == 0);
    const bool q = !uni && x.p;
#else
    const bool q = x.p;
#endif
#if AGG == 4
    ap_inc(a, q && !hi);   // low half: ATOMS.POPC.INC, equal lanes once
    ap_inc_hi(a, q && hi);  // high half: ATOMS.ADD, every lane counts
#else
    ap_add(a, 1u << (hi * 16), q);  // one ATOMS.ADD: every lane counts
#endif
#endif
    (void)key;  // unused by AGG 0 and 4
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
    AP_GRID_WAIT();  // a spill may write out at any scan: wait for hist_zero before the loop
    __syncthreads();
    const unsigned hs = (unsigned)__cvta_generic_to_shared(h);
    const unsigned limit = (unsigned)min(BINS, total_bins);

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
            for (int j = 0; j < PER; ++j) ap_update16(hs, ap_bin(v[it], j, ok[it], 0, limit), lane);
        if (++since == SCAN_EVERY) {
            since = 0;
            __syncthreads();
            ap_spill16(h, out, total_bins, tid);
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && tid < 32) ap_update16(hs, ap_tail_bin(in, n, nvec, lane, 0, limit), lane);
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

#endif  // COUNTER == 16

// ---- weighted: count and sum per bin, AoS or SoA -------------------------------------------------------
#ifndef W_REPLICAS
#define W_REPLICAS 1
#endif
// W_F64 = 1: float64 weights, read as they are (two 16-byte loads per 4 values) and added as float32; a
// separate build the launcher takes for float64 weights, in place of a cast pass over them
#ifndef W_F64
#define W_F64 0
#endif
#if W_F64
typedef double ap_wt;
#else
typedef float ap_wt;
#endif
// byte offsets of record i's count and sum (record i = bin * W_REPLICAS + copy)
#define W_COFF(i) (W_AOS ? (i) * W_STRIDE : (i) * 4)
#define W_SOFF(i) (W_AOS ? (i) * W_STRIDE + 4 : W_BASE1 + (i) * 4)
#define W_RECORDS (BINS * W_REPLICAS)
#define W_BYTES (W_AOS ? W_RECORDS * W_STRIDE : W_BASE1 + W_RECORDS * 4)

__device__ __forceinline__ void ap_wupdate(unsigned char* sm, int b, float w, int lane) {
#if AGG == 2
    const int b0 = __shfl_sync(FULL, b, 0);
    if (__all_sync(FULL, b == b0)) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(FULL, w, o);
        if (b >= 0 && lane == 0) {
            atomicAdd(reinterpret_cast<ap_u32*>(sm + W_COFF(b * W_REPLICAS)), 32u);
            atomicAdd(reinterpret_cast<float*>(sm + W_SOFF(b * W_REPLICAS)), w);
        }
        return;
    }
#endif
    if (b >= 0) {
        const int i = b * W_REPLICAS + lane % W_REPLICAS;
        atomicAdd(reinterpret_cast<ap_u32*>(sm + W_COFF(i)), 1u);
        atomicAdd(reinterpret_cast<float*>(sm + W_SOFF(i)), w);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
whist_kernel(ap_u32* __restrict__ counts, float* __restrict__ sums, const int* __restrict__ in,
             const ap_wt* __restrict__ wts, long long n, int lo, int total_bins) {
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
#if W_F64
                const double2* wd = reinterpret_cast<const double2*>(wts) + 2 * idx;
                const double2 d0 = wd[0], d1 = wd[1];
                w[it] = f4w{(float)d0.x, (float)d0.y, (float)d1.x, (float)d1.y};
#else
                w[it] = reinterpret_cast<const f4w*>(wts)[idx];
#endif
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
                wv = (float)wts[i];
            }
        }
        ap_wupdate(sm, b, wv, lane);
    }
    __syncthreads();
    for (int b = tid; b < BINS && lo + b < total_bins; b += THREADS) {
        ap_u32 c = 0u;
        float s = 0.f;
        for (int k = 0; k < W_REPLICAS; ++k) {
            const int i = b * W_REPLICAS + (b + k) % W_REPLICAS;
            c += *reinterpret_cast<const ap_u32*>(sm + W_COFF(i));
            s += *reinterpret_cast<const float*>(sm + W_SOFF(i));
        }
        if (c) {
            atomicAdd(&counts[lo + b], c);
            atomicAdd(&sums[lo + b], s);
        }
    }
}
