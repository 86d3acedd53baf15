// Out-of-place (batched) transpose: in [B, M, N] -> out [B, N, M], any element size, any shape.
//
// One block moves a TILE_M x TILE_N tile: THREADS threads read it row by row from global memory with
// VEC-element (up to 16-byte) loads, store each vector into the shared tile at SMEM_OFF(r, c) (one
// VEC x ELEM_BYTES-byte st.shared), then read it back column-wise: each thread gathers VEC elements of one
// tile column (VEC separate ELEM_BYTES-byte ld.shared, rows sx*VEC .. sx*VEC+VEC-1) into a register vector
// and writes it as one vector to the output row. The column walk is where banks collide: in an unpadded
// 32-wide fp32 tile, rows are 32 words apart, so all 32 lanes of a walk hit one bank; PAD or the XOR
// swizzle (common.cuh) spread them. Edges and misaligned shapes take a guarded scalar global path but keep
// exactly the same shared-memory instructions, so the model's pattern holds for every block.
//
// READOUT = 1 (1- and 2-byte elements, 16-byte vectors): instead of VEC single-element loads, a thread
// reads VEC 4-byte words (tile rows sx*VEC + v, G = 4 / ELEM_BYTES consecutive columns each), transposes
// the VEC x G block in registers with byte permutes, and writes G output rows of 16 bytes: a quarter (bytes)
// or half (halves) of the shared-memory instructions.
//
// Macros (all injected with -D): ELEM_BYTES, TILE_M, TILE_N, THREADS, VEC, PAD, SW_VEC, SW_PER_PHASE,
// SW_MAX_PHASE, READOUT.
#include "common.cuh"

#ifndef ELEM_BYTES
#define ELEM_BYTES 4
#endif
#ifndef TILE_M
#define TILE_M 32
#endif
#ifndef TILE_N
#define TILE_N 32
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef SW_VEC
#define SW_VEC 1
#endif
#ifndef SW_PER_PHASE
#define SW_PER_PHASE 1
#endif
#ifndef SW_MAX_PHASE
#define SW_MAX_PHASE 1
#endif
#ifndef READOUT
#define READOUT 0
#endif

#define SMEM_OFF(r, c) AP_SMEM_OFF(r, c, TILE_N, PAD, SW_VEC, SW_PER_PHASE, SW_MAX_PHASE)

typedef ap_uint<ELEM_BYTES>::type T;

// one VEC-element vector as a single machine word of VEC * ELEM_BYTES bytes (so loads/stores are one
// instruction of that width) and as its elements
#define VB (VEC * ELEM_BYTES)
struct __align__(16) ap_w16 { ap_u32 x, y, z, w; };
template <int N> struct ap_word;
template <> struct ap_word<1> { typedef ap_u8 type; };
template <> struct ap_word<2> { typedef ap_u16 type; };
template <> struct ap_word<4> { typedef ap_u32 type; };
template <> struct ap_word<8> { typedef ap_u64 type; };
template <> struct ap_word<16> { typedef ap_w16 type; };
typedef ap_word<VB>::type W;
union Vec {
    W w;
    T e[VEC];
};

// load phase: LX threads span a tile row, LY rows per pass, LPASS passes
#define LX (TILE_N / VEC)
#define LY (THREADS / LX)
#define LPASS (TILE_M / LY)
// store phase: SX threads span an output row (a tile column), SY output rows per pass
#define SX (TILE_M / VEC)
#define SY (THREADS / SX)
#define SPASS (TILE_N / SY)

static_assert(VB <= 16, "vector wider than 16 bytes");
static_assert(TILE_N % VEC == 0 && TILE_M % VEC == 0, "tile not a whole number of vectors");
static_assert(THREADS % LX == 0 && TILE_M % LY == 0, "load phase does not tile");
static_assert(THREADS % SX == 0 && TILE_N % SY == 0, "store phase does not tile");
#if READOUT == 1
#define G (4 / ELEM_BYTES)  // elements per 4-byte word
#define RPASS (TILE_N / (SY * G))
static_assert(ELEM_BYTES <= 2 && VB == 16, "register read-out needs 1- or 2-byte elements in 16-byte vectors");
static_assert(TILE_N % (SY * G) == 0, "register read-out does not tile");
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
transpose_kernel(T* __restrict__ out, const T* __restrict__ in, int M, int N, int B, int aligned) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* tile = reinterpret_cast<T*>(smem_raw);
    const int tid = threadIdx.x;
    const int n0 = blockIdx.x * TILE_N;
    const int m0 = blockIdx.y * TILE_M;
    const bool full = aligned && (m0 + TILE_M <= M) && (n0 + TILE_N <= N);
    const int lx = tid % LX, ly = tid / LX;
    const int sx = tid % SX, sy = tid / SX;
    const long long plane = (long long)M * N;

    for (int b = blockIdx.z; b < B; b += gridDim.z) {
        const T* src = in + b * plane;
        T* dst = out + b * plane;
        Vec regs[LPASS];
        if (full) {
#pragma unroll
            for (int p = 0; p < LPASS; ++p)
                regs[p].w = *reinterpret_cast<const W*>(src + (long long)(m0 + ly + p * LY) * N + n0 + lx * VEC);
        } else {
#pragma unroll
            for (int p = 0; p < LPASS; ++p) {
                const int m = m0 + ly + p * LY;
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    const int n = n0 + lx * VEC + v;
                    regs[p].e[v] = (m < M && n < N) ? src[(long long)m * N + n] : T(0);
                }
            }
        }
        // st.shared of VB bytes: lane writes elements (ly + p*LY, lx*VEC .. +VEC)
#pragma unroll
        for (int p = 0; p < LPASS; ++p)
            *reinterpret_cast<W*>(tile + SMEM_OFF(ly + p * LY, lx * VEC)) = regs[p].w;
        __syncthreads();
#if READOUT == 1
#pragma unroll
        for (int p = 0; p < RPASS; ++p) {
            const int nn = (sy + p * SY) * G;
            ap_u32 w[VEC];
            // VEC ld.shared of 4 bytes: tile row sx*VEC + v, columns nn .. nn + G - 1
#pragma unroll
            for (int v = 0; v < VEC; ++v) w[v] = *reinterpret_cast<const ap_u32*>(tile + SMEM_OFF(sx * VEC + v, nn));
#pragma unroll
            for (int g = 0; g < G; ++g) {
                Vec o;
                ap_u32 q[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
#if ELEM_BYTES == 1  // byte g of rows 4k .. 4k+3
                    const ap_u32 t0 = __byte_perm(w[4 * k], w[4 * k + 1], g | ((4 + g) << 4));
                    const ap_u32 t1 = __byte_perm(w[4 * k + 2], w[4 * k + 3], g | ((4 + g) << 4));
                    q[k] = __byte_perm(t0, t1, 0x5410);
#else  // half g of rows 2k, 2k+1
                    q[k] = __byte_perm(w[2 * k], w[2 * k + 1], g ? 0x7632 : 0x5410);
#endif
                }
                o.w.x = q[0];
                o.w.y = q[1];
                o.w.z = q[2];
                o.w.w = q[3];
                const int row = n0 + nn + g;
                if (full) {
                    *reinterpret_cast<W*>(dst + (long long)row * M + m0 + sx * VEC) = o.w;
                } else if (row < N) {
#pragma unroll
                    for (int v = 0; v < VEC; ++v) {
                        const int m = m0 + sx * VEC + v;
                        if (m < M) dst[(long long)row * M + m] = o.e[v];
                    }
                }
            }
        }
#else
#pragma unroll
        for (int p = 0; p < SPASS; ++p) {
            const int nn = sy + p * SY;
            Vec o;
            // VEC ld.shared of ELEM_BYTES each, down tile column nn: the bank-sensitive walk
#pragma unroll
            for (int v = 0; v < VEC; ++v) o.e[v] = tile[SMEM_OFF(sx * VEC + v, nn)];
            if (full) {
                *reinterpret_cast<W*>(dst + (long long)(n0 + nn) * M + m0 + sx * VEC) = o.w;
            } else if (n0 + nn < N) {
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    const int m = m0 + sx * VEC + v;
                    if (m < M) dst[(long long)(n0 + nn) * M + m] = o.e[v];
                }
            }
        }
#endif
        if (b + gridDim.z < B) __syncthreads();  // the tile is reused by the next batch entry
    }
}
