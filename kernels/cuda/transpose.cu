// Out-of-place (batched) transpose: in [B, M, N] -> out [B, N, M], any element size, any shape.
//
// One block moves a TILE_M x TILE_N tile: THREADS threads read it row by row from global memory with
// VEC-element (up to 16-byte) loads, store each vector into the shared tile at SMEM_OFF(r, c) (one
// VEC x ELEM_BYTES-byte st.shared), then read it back column-wise: each thread gathers VEC elements of one
// tile column (VEC separate ELEM_BYTES-byte ld.shared, rows sx*VEC .. sx*VEC+VEC-1) into a register vector
// and writes it as one vector to the output row. The column walk is where banks collide: in an unpadded
// 32-wide fp32 tile, rows are 32 words apart, so all 32 lanes of a walk hit one bank; PAD or the XOR
// swizzle (common.cuh) spread them.
//
// READOUT = 1 (1- and 2-byte elements, 16-byte vectors): instead of VEC single-element loads, a thread
// reads VEC 4-byte words (tile rows sx*VEC + v, G = 4 / ELEM_BYTES consecutive columns each), transposes
// the VEC x G block in registers with byte permutes, and writes G output rows of 16 bytes: a quarter (bytes)
// or half (halves) of the shared-memory instructions.
// READOUT = 2 (2-byte elements, 16-byte vectors, SCALAR_EDGE = 0): one ldmatrix.x4.trans per 32 x 8 block
// of the tile gives each lane 8 consecutive tile rows of one column, a whole 16-byte output vector, in one
// instruction (what Triton's tl.trans uses for 16-bit types). Lane 8i + j points matrix i's row j at tile
// row 8(j / 2) + 2((i + j / 2) mod 4) + j mod 2: each 8-lane matrix then covers all 8 residues of the row
// mod 8 (conflict-free under an r mod 8 swizzle or a 16-byte row pad), at the cost of a register rotation.
//
// SCALAR_EDGE = 1 (the original path): edge tiles and shapes whose rows are not a whole number of vectors
// take a guarded scalar global path (VEC bounds-checked element loads per vector, all in flight at once;
// the kernel's registers, and so its occupancy, are sized by that path). SCALAR_EDGE = 0: every global
// access is an aligned vector. Edge tiles predicate whole vectors; rows that do not start on a vector
// boundary (MISALIGNED = 1, a separate build chosen at launch) load the aligned vectors that cover each
// tile row and shift them into place with funnel shifts, taking the neighbouring vector from the next lane
// (__shfl_down_sync; the last lane of a row or warp loads it itself). Output rows that do not start on a
// vector boundary (M % VEC != 0, or an odd output pointer) are written as whole aligned vectors too: output
// row n's elements [m0 + u, m0 + u + TILE_M) belong to the block of tile m0, u (0 < u < VEC) being how far
// past m0 the row's first aligned vector starts, so the block also loads VEC halo rows past its tile (input
// rows m0 + TILE_M .., into tile rows TILE_M ..). READOUT 0 (and READOUT 1 of 2-byte elements) then gathers
// each output vector from tile rows shifted by u (ap_gather_shifted); READOUT 1 of 1-byte elements keeps its
// register transpose over a window of word loads shifted per lane, at offsets fixed per M % 16 at compile
// time (ap_rt_window: up to 12 more halo rows; H200 run 147, int8, the same tiles built both ways in one
// process: 0.94-0.99x the time at 4097 x 8191, 0.90-1.02x at 8193 x 16383, 0.98-1.03x at 4100 x 8192;
// the best tile 0.820 -> 0.844 and 0.783 -> 0.825 of copy at the first two), where the earlier read-out
// shuffled each vector to the previous lane and funnel-shifted it, RT_STATIC 0). Only the first tile
// writes a row's head [0, u) and only the tile at the end of M stores single elements. (The earlier build
// wrote each segment's two partial vectors from two blocks as up to 2 log2(VEC) small stores into one
// 16-byte block: 4097 x 8191 at 0.63-0.68 of copy for
// 1-byte elements, 0.76 for 2-byte, H200 runs 19-25; runs 26 and 28 measured the halo builds.)
// Where only the input rows are off the grid (M % VEC == 0, N % VEC != 0: `halo` false), the misaligned
// build's read-out is the aligned one's (ap_put_grid: one guarded vector store, no shuffle; H200 run 37,
// 4096 x 8191, against the shuffles this path used to run: int8 128 x 128 0.827 -> 0.885 of copy, fp64 0.900
// -> 0.923).
// The model scores the aligned build's shared-memory pattern, and where READOUT 1 of 2-byte elements runs
// the shifted gather below it charges READOUT 0's wavefronts (kernels/cuda/transpose.py); it does not score
// the halo rows' stores, the per-row offset u or the 1-byte window's S more word loads a pass.
// This path runs a 1-D grid of one tile per block, is built with __launch_bounds__(THREADS, MIN_BLOCKS),
// and takes `group` (>= 1): blocks walk bands of `group` tile rows column by column (GEMM's grouped order),
// so that the tiles in flight together cover a squarer region of both the input and the output; a group of
// at least the tile rows (GROUP 4096 in the space) walks whole tile columns, so that the blocks in flight
// write a few output rows from end to end (H200 run 110: fp32 16384^2 0.98 of copy against GROUP 64's 0.95).
//
// Macros (all injected with -D): ELEM_BYTES, TILE_M, TILE_N, THREADS, VEC, PAD, SW_VEC, SW_PER_PHASE,
// SW_MAX_PHASE, READOUT, SCALAR_EDGE, MISALIGNED, MIN_BLOCKS (and RT_SHIFT, RT_STATIC, A/B switches).
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
#ifndef SCALAR_EDGE
#define SCALAR_EDGE 1
#endif
#ifndef MISALIGNED
#define MISALIGNED 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
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

#if SCALAR_EDGE
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
#else  // SCALAR_EDGE == 0: aligned vectors everywhere

#define NW ((VB + 3) / 4)  // 4-byte words per vector (one, partly used, below 4 bytes)
union VecU {
    W w;
    T e[VEC];
    ap_u32 u[NW];
};

// the misaligned build's halo: VEC input rows past the tile, for output rows off the vector grid, loaded
// in HPASS passes of LY rows (two where a tile row has more vectors than the block has threads over VEC:
// 32 x 128 int8 with 64 threads loads LY = 8 rows a pass)
#define HALO (MISALIGNED && VEC > 1 && READOUT != 2)
// RT_STATIC (1-byte READOUT 1, an A/B switch, on by default): the halo read-out by a window of word loads
// at a shift known at compile time per M % 16 (ap_rt_window below), which needs up to VEC + 12 halo rows
#ifndef RT_STATIC
#define RT_STATIC 1
#endif
#define RT_WINDOW (HALO && READOUT == 1 && ELEM_BYTES == 1 && RT_STATIC)
#define HROWS (RT_WINDOW ? VEC + 12 : HALO ? VEC : 0)  // halo rows the tile holds past TILE_M
#define HPASS (HALO ? (HROWS + LY - 1) / LY : 0)

#if READOUT == 2
#define RM2 (TILE_M / 32)           // 32-row blocks per tile column
#define UNITS2 (RM2 * (TILE_N / 8))  // 32 x 8 blocks per tile: one ldmatrix.x4 each
#define WARPS (THREADS / 32)
static_assert(ELEM_BYTES == 2 && VEC == 8, "ldmatrix read-out needs 2-byte elements in 16-byte vectors");
static_assert(TILE_M % 32 == 0 && TILE_N % 8 == 0 && UNITS2 % WARPS == 0, "ldmatrix read-out does not tile");
#endif

// bytes [s, s + VB) of the 2 * VB-byte little-endian window lo ++ hi, 0 <= s < VB: the vector that starts s
// bytes into lo. Word k of it is a funnel shift of window words k + s / 4 and k + s / 4 + 1. The window is
// first rotated left by s / 4 words one bit at a time (log2(NW) stages of selects: 11 for a 16-byte vector,
// where picking each word among NW took 24); a run-time index into a register array would go to local
// memory.
__device__ __forceinline__ void ap_funnel(VecU& out, const VecU& lo, const VecU& hi, int s) {
#if VB >= 4
    ap_u32 win[2 * NW];
#pragma unroll
    for (int k = 0; k < NW; ++k) {
        win[k] = lo.u[k];
        win[NW + k] = hi.u[k];
    }
    const int q = s >> 2;
    const unsigned r = (unsigned)(s & 3) * 8u;
#pragma unroll
    for (int b = NW / 2; b >= 1; b >>= 1) {
        const bool take = (q & b) != 0;
#pragma unroll
        for (int i = 0; i + b < 2 * NW; ++i) win[i] = take ? win[i + b] : win[i];
    }
#pragma unroll
    for (int k = 0; k < NW; ++k) out.u[k] = __funnelshift_r(win[k], win[k + 1], r);
#else  // two 1-byte elements: a 4-byte window
    const ap_u32 win = (ap_u32)lo.w | ((ap_u32)hi.w << (8 * VB));
    out.w = (W)(win >> (8 * s));
#endif
}

// the next lane's vector (the warp's last lane gets its own back: callers replace it)
__device__ __forceinline__ VecU ap_next_lane(const VecU& v) {
    VecU o;
#if VB >= 4
#pragma unroll
    for (int k = 0; k < NW; ++k) o.u[k] = __shfl_down_sync(0xffffffffu, v.u[k], 1);
#else
    o.w = (W)__shfl_down_sync(0xffffffffu, (ap_u32)v.w, 1);
#endif
    return o;
}

// one st.global of VB bytes. Inline PTX: NVVM split a plain 16-byte store of the union (or of a uint4 made
// from it) into four 4-byte stores in this kernel, a quarter-filled sector per instruction
__device__ __forceinline__ void ap_store(T* p, const VecU& o) {
#if VB == 16
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(o.u[0]), "r"(o.u[1]), "r"(o.u[2]),
                 "r"(o.u[3])
                 : "memory");
#elif VB == 8
    asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(p), "r"(o.u[0]), "r"(o.u[1]) : "memory");
#else
    *reinterpret_cast<W*>(p) = o.w;
#endif
}

// the elements of vector o at row[e0 ..] that fall below mvalid. Not inlined: merged into its caller,
// the compiler would if-convert the caller's whole-vector store into VEC narrow stores
__device__ __noinline__ void ap_put_part(T* row, int e0, int mvalid, VecU o) {
#pragma unroll
    for (int v = 0; v < VEC; ++v)
        if (e0 + v < mvalid) row[e0 + v] = o.e[v];
}

#if HALO  // ap_put's helpers
// bytes [p, p + Z) of w (p % Z == 0) as one naturally aligned Z-byte st.global at blk + p
template <int Z> __device__ __forceinline__ void ap_piece(unsigned char* blk, const VecU& w, int p) {
    const int k = p >> 2;
    ap_u32 x = w.u[0];
#pragma unroll
    for (int j = 1; j < NW; ++j)
        if (k == j) x = w.u[j];
    if (Z == 8) {  // 16-byte vectors only: p is 0 or 8
        const ap_u32 y = k ? w.u[NW > 3 ? 3 : 0] : w.u[NW > 1 ? 1 : 0];
        x = k ? w.u[NW > 2 ? 2 : 0] : w.u[0];
        asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(blk + p), "r"(x), "r"(y) : "memory");
    } else {
        x >>= (unsigned)(p & 3) * 8u;
        if (Z == 4) *reinterpret_cast<ap_u32*>(blk + p) = x;
        if (Z == 2) *reinterpret_cast<ap_u16*>(blk + p) = (ap_u16)x;
        if (Z == 1) blk[p] = (ap_u8)x;
    }
}

// Bytes [lo, VB) of w into the VB-aligned block at blk (a row segment's head): naturally aligned pieces of
// ELEM_BYTES, 2 ELEM_BYTES, ... bytes going up, the piece of Z bytes at (lo + Z - 1) & -Z where that has
// bit Z set. At most log2(VB / ELEM_BYTES) stores, where element stores took up to VEC - 1, each a request
// of its own to L2 (the 4097 x 8191 int8 check: 15 one-byte stores per 128-byte row segment).
__device__ __forceinline__ void ap_store_head(unsigned char* blk, const VecU& w, int lo) {
#define AP_HEAD(Z)                                                        \
    if (ELEM_BYTES <= Z && Z < VB) {                                      \
        const int p = (lo + Z - 1) & -Z;                                  \
        if (p & Z) ap_piece<(Z < VB ? Z : 1)>(blk, w, p);                 \
    }
    AP_HEAD(1) AP_HEAD(2) AP_HEAD(4) AP_HEAD(8)
#undef AP_HEAD
}

#endif

#if HALO
// ap_put's shifted row in the tile at the end of M (mvalid < TILE_M): the aligned vector at e0 + u where it
// lies wholly below mvalid, else its elements below mvalid; the head [0, u) from the first lane of the first
// tile. Not inlined: one tile row in M/TILE_M takes it, and inlined it would double the code of the hot path.
__device__ __noinline__ void ap_put_edge(T* row, int e0, int mvalid, int sh, bool head, VecU o, VecU nx) {
    const int u = VEC - sh / ELEM_BYTES;
    VecU w;
    ap_funnel(w, o, nx, VB - sh);  // elements e0 + u .. e0 + u + VEC - 1
    const int e1 = e0 + u;
    if (e1 + VEC <= mvalid)
        ap_store(row + e1, w);
    else
        ap_put_part(row, e1, mvalid, w);
    if (head) {
#pragma unroll
        for (int v = 0; v < VEC; ++v)
            if (v < u && e0 + v < mvalid) row[e0 + v] = o.e[v];
    }
}
#endif

// Store a lane's VEC elements where every output row is on the vector grid (the aligned build, or a
// misaligned one whose output rows are not shifted: `halo` false): output row n, tile-relative columns
// e0 .. e0 + VEC - 1 (global m0 + e0 ..). Rows of whole vectors: a vector is wholly in or out, one guarded
// vector store, no element-wise fallback (the compiler would merge it in as VEC narrow stores), no shuffle.
__device__ __forceinline__ void ap_put_grid(T* __restrict__ dst, int n, int N, int M, int m0, int e0,
                                            const VecU& o) {
    if (n >= N) return;
    if (e0 < min(TILE_M, M - m0)) ap_store(dst + (long long)n * M + m0 + e0, o);
}

#if HALO
// Store a lane's VEC elements on output rows that may be off the vector grid (the 1-byte register
// read-out's halo path): output row n, tile-relative columns e0 .. e0 + VEC - 1 (global m0 + e0 ..).
// Every lane of the warp must call it (it shuffles). Aligned rows: one vector store. Rows that start sh
// bytes past a vector boundary: the lane writes the aligned vector that begins u = VEC - sh / ELEM_BYTES
// elements into its own, funnel-shifted from its vector and the next group's (the next lane's; `ext`, read
// from the tile, for the last lane of a row segment or warp, `edge`); `head` (the first lane of the first
// tile) also writes the row's first u elements. Elements at or past M are never written.
__device__ __forceinline__ void ap_put(T* __restrict__ dst, int n, int N, int M, int m0, int e0, bool head,
                                       bool edge, const VecU& o, const VecU& ext) {
    VecU nx = ap_next_lane(o);
    if (edge) nx = ext;
    if (n >= N) return;
    const int mvalid = min(TILE_M, M - m0);
    T* row = dst + (long long)n * M + m0;
    const int sh = (int)((size_t)row & (VB - 1));
    if (sh != 0) {
        if (mvalid == TILE_M) {  // a whole tile (block-uniform): one aligned vector a lane
            const int e1 = e0 + VEC - sh / ELEM_BYTES;
            VecU w;
            ap_funnel(w, o, nx, VB - sh);  // bytes [0, sh) ours, [sh, VB) the next group's
            if (m0 + e1 + VEC <= M)
                ap_store(row + e1, w);
            else  // the segment's last vector runs past the row's end (the next tile holds fewer than u)
                ap_put_part(row, e1, M - m0, w);
            if (head) {  // the block before the first aligned one holds our first VB - sh bytes at [sh, VB)
                VecU h;
                ap_funnel(h, o, o, VB - sh);
                ap_store_head(reinterpret_cast<unsigned char*>(row + e1) - VB, h, sh);
            }
            return;
        }
        ap_put_edge(row, e0, mvalid, sh, head, o, nx);
        return;
    }
    if (e0 + VEC <= mvalid)
        ap_store(row + e0, o);
    else
        ap_put_part(row, e0, mvalid, o);
}
#endif

#if READOUT == 1
// output rows nn + g of a lane's group: VEC 4-byte words w (tile rows sx*VEC + v, columns nn .. nn + G - 1)
// transposed in registers with byte permutes into G vectors of VEC elements
__device__ __forceinline__ void ap_rt(VecU& o, const ap_u32* w, int g) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
#if ELEM_BYTES == 1  // byte g of rows 4k .. 4k+3
        const ap_u32 t0 = __byte_perm(w[4 * k], w[4 * k + 1], g | ((4 + g) << 4));
        const ap_u32 t1 = __byte_perm(w[4 * k + 2], w[4 * k + 3], g | ((4 + g) << 4));
        o.u[k] = __byte_perm(t0, t1, 0x5410);
#else  // half g of rows 2k, 2k+1
        o.u[k] = __byte_perm(w[2 * k], w[2 * k + 1], g ? 0x7632 : 0x5410);
#endif
    }
}
#endif

#if RT_WINDOW
// The 1-byte halo read-out without shuffles or funnel shifts. Output row n's aligned 16-byte vectors begin
// at tile rows s(n) (mod 16), s(n) = -(address of row n at m0) mod 16, and s(n + g) = s(n) - g R (mod 16)
// for R = M mod 16. A lane's four output rows nn + g (one 4-byte word of the tile holds their columns)
// take their vectors at tile rows sx * VEC + t + d_g, where d_g = (-g R - C) mod 16 and t = (s(n) + C) mod
// 16 (so t + d_g = s(n + g) mod 16): C, the residue the four start from, is chosen per R at compile time so
// that the d_g span the fewest rows (S = max d_g: 3 for R = 1 or 15, at most 12). The lane loads VEC + S
// words at tile rows sx * VEC + t .. and transposes bytes d_g .. d_g + 15 of them for row nn + g, at offsets
// the compiler knows: VEC + S ld.shared a pass for four vectors, where the funnel-shifted read-out (RT_STATIC
// 0) issued 2 VEC and four shuffles, selects and funnel shifts a vector. Row n's vectors start t + d_g rows
// into every tile, so the tile of m0 writes [m0 + t + d_g, m0 + TILE_M + t + d_g): it reads up to 15 + S halo
// rows past itself, and the first tile also writes the row's head [0, t + d_g).
__host__ __device__ constexpr int ap_window_from(int r, int c) {  // max_g (-g r - c) mod 16
    int s = 0;
    for (int g = 0; g < 4; ++g) s = ((-g * r - c) & 15) > s ? ((-g * r - c) & 15) : s;
    return s;
}
__host__ __device__ constexpr int ap_window_start(int r) {  // the residue C of the fewest rows
    int best = 0;
    for (int g = 1; g < 4; ++g)
        if (ap_window_from(r, (-g * r) & 15) < ap_window_from(r, best)) best = (-g * r) & 15;
    return best;
}
__host__ __device__ constexpr int ap_window_span(int r) { return ap_window_from(r, ap_window_start(r)); }
static_assert(ap_window_span(1) == 3 && ap_window_span(15) == 3 && ap_window_span(5) == 11, "window spans");
static_assert(HROWS >= 15 + ap_window_span(4) && ap_window_span(12) == 12, "halo rows of the window");

template <int R>
__device__ __forceinline__ void ap_rt_window(const T* tile, T* __restrict__ dst, unsigned dst_lo, int n0, int N,
                                             int M, int m0, int sx, int sy) {
    constexpr int C = ap_window_start(R), S = ap_window_span(R);
    const int lim = M - m0;  // elements of an output row from m0 on
#pragma unroll
    for (int p = 0; p < RPASS; ++p) {
        const int nn = (sy + p * SY) * G;
        if (n0 + nn >= N) continue;
        T* row0 = dst + (long long)(n0 + nn) * M + m0;
        // the row's address mod 16 from integers (dst_lo: dst's). Builds that stored the partial vectors
        // through a call failed with the shift taken from the row pointer's low word, from the 64-bit
        // address and from these integers alike (H200 runs 141-144, cause not established)
        const unsigned lo = (dst_lo + (unsigned)(n0 + nn) * (unsigned)M + (unsigned)m0) & 15u;
        const int t = (int)((16u - lo + (unsigned)C) & 15u);
        const int rb = sx * VEC + t;  // the window's first tile row
        ap_u32 w[VEC + S];
#pragma unroll
        for (int j = 0; j < VEC + S; ++j) w[j] = *reinterpret_cast<const ap_u32*>(tile + SMEM_OFF(rb + j, nn));
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (n0 + nn + g >= N) break;
            const int d = (-g * R - C) & 15;  // a constant once g is unrolled
            VecU o;
            ap_rt(o, w + d, g);
            T* row = row0 + (long long)g * M;
            const int e = rb + d;  // tile-relative: m0 + e is 16-byte aligned in output row nn + g
            if (e + VEC <= lim) {
                ap_store(row + e, o);
            } else if (e < lim) {
                // in line, each byte an asm store, no call: builds that stored these bytes through a
                // __noinline__ call wrote wrong bytes or to wild addresses on some tiles and residues (H200 runs
                // 138-144, cause not established); this form passed every check of runs 145-147
#pragma unroll
                for (int v = 0; v < VEC; ++v)
                    if (e + v < lim)
                        asm volatile("st.global.u8 [%0], %1;\n" ::"l"(row + e + v), "r"(o.u[v >> 2] >> (8 * (v & 3)))
                                     : "memory");
            }
            if (m0 == 0 && sx == 0) {  // the row's head [0, t + d)
                for (int v = 0; v < e && v < lim; ++v) row[v] = tile[SMEM_OFF(v, nn + g)];
            }
        }
    }
}
#endif

#if HALO
// READOUT 1 builds take the shifted gather too where elements are 2 bytes (H200 run 28, 4097 x 8191 fp16:
// 0.823 -> 0.844 of copy for 64 x 64 tiles, 0.759 -> 0.789 for 128 x 64), not for 1 byte (int8 64 x 128:
// 0.773 -> 0.669; sixteen 1-byte loads a vector cost more than the register transpose's second read)
#ifndef RT_SHIFT
#define RT_SHIFT (ELEM_BYTES == 2)
#endif
// The read-out where output rows are off the vector grid, by shifted gather: output row n's aligned vector
// that starts u = VEC - sh / ELEM_BYTES elements into the lane's group is VEC elements of tile column nn
// from tile row sx*VEC + u on (the last lanes' reach into the halo rows), gathered with VEC single-element
// ld.shared as READOUT 0 does, so no shuffle, funnel shift or second read of a group: the shift is in the
// row index. The first lane of the first tile also writes the row's head [0, u). Bank pattern: READOUT 0's
// column walk with a per-row offset u (it depends on M and N mod VEC; the model scores u = 0).
__device__ __forceinline__ void ap_gather_shifted(const T* tile, T* __restrict__ dst, int n0, int N, int M,
                                                  int m0, int sx, int sy) {
    const int lim = M - m0;  // elements of an output row from m0 on
#pragma unroll
    for (int p = 0; p < SPASS; ++p) {
        const int nn = sy + p * SY;
        if (n0 + nn >= N) continue;
        T* row = dst + (long long)(n0 + nn) * M + m0;
        const int sh = (int)((size_t)row & (VB - 1));
        const int u = sh ? VEC - sh / ELEM_BYTES : 0;
        const int e1 = sx * VEC + u;
        VecU o;
#pragma unroll
        for (int v = 0; v < VEC; ++v) o.e[v] = tile[SMEM_OFF(e1 + v, nn)];
        if (e1 + VEC <= lim)
            ap_store(row + e1, o);
        else
            ap_put_part(row, e1, lim, o);
        if (m0 == 0 && sx == 0) {
            for (int v = 0; v < u && v < lim; ++v) row[v] = tile[SMEM_OFF(v, nn)];
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
transpose_kernel(T* __restrict__ out, const T* __restrict__ in, int M, int N, int B, int group) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* tile = reinterpret_cast<T*>(smem_raw);
    // a 1-D grid of B x tiles blocks, one tile each (no loop: nothing is hoisted across tiles to hold
    // registers); within a plane, bands of `group` tile rows walked column by column (a bijection)
    const unsigned gx = ((unsigned)N + TILE_N - 1) / TILE_N, gy = ((unsigned)M + TILE_M - 1) / TILE_M;
    unsigned lin = blockIdx.x;
    const unsigned b = lin / (gx * gy);
    lin -= b * gx * gy;
    unsigned tm, tn;
    if (group > 1) {
        // a band of at least gy tile rows is the whole column (column-major order); clamped so that g * gx
        // stays within the grid's tile count
        const unsigned g = min((unsigned)group, gy), band = lin / (g * gx);
        const unsigned rows = min(g, gy - band * g), idx = lin - band * g * gx;
        tm = band * g + idx % rows;
        tn = idx / rows;
    } else {
        tm = lin / gx;
        tn = lin - tm * gx;
    }
    const int m0 = (int)tm * TILE_M, n0 = (int)tn * TILE_N;
    const int tid = threadIdx.x;
    const int lx = (unsigned)tid % LX, ly = (unsigned)tid / LX;
    const int sx = (unsigned)tid % SX, sy = (unsigned)tid / SX;
    const int lane = tid & 31;
    // output rows off the vector grid (they then all are: M % VEC != 0 or an odd pointer, grid-uniform) are
    // written as aligned vectors with the halo rows; `head`: the lane that writes a row's first elements,
    // `edge`: the last lane of a row segment or warp, whose next group is not in the next lane
    const bool halo = HALO && ((M % VEC) != 0 || ((size_t)out & (VB - 1)) != 0);
    const bool head = sx == 0 && m0 == 0, edge = sx == SX - 1 || lane == 31;
    (void)halo, (void)head, (void)edge;  // read by the misaligned builds only
    {
        const T* src = in + (long long)b * M * N;
        T* dst = out + (long long)b * M * N;
#if MISALIGNED && VEC > 1
        {
            // row m's tile segment starts sh bytes past a vector boundary: load the aligned vectors that
            // cover it (lane lx: the lx-th; the next one from lane + 1, or loaded by the row's / warp's last
            // lane), funnel-shift, store aligned to the tile. Vectors wholly past the segment stay unread.
            // Where output rows are shifted too, passes LPASS .. load the VEC halo rows past the tile into
            // tile rows TILE_M .. (one pass where LY >= VEC)
            const bool edge_lane = (lx == LX - 1) || (lane == 31);
            const int nend = min(N, n0 + TILE_N);
#if RT_WINDOW  // the rows ap_rt_window reads past the tile for this M: 15 + its span
            int hneed = 0;
            switch (M & 15) {
#define AP_HN(R) \
    case R: hneed = 15 + ap_window_span(R); break;
                AP_HN(0) AP_HN(1) AP_HN(2) AP_HN(3) AP_HN(4) AP_HN(5) AP_HN(6) AP_HN(7)
                AP_HN(8) AP_HN(9) AP_HN(10) AP_HN(11) AP_HN(12) AP_HN(13) AP_HN(14) AP_HN(15)
#undef AP_HN
            }
#else
            const int hneed = VEC;
#endif
            VecU cur[LPASS + HPASS], ext[LPASS + HPASS];
            int shs[LPASS + HPASS];
#pragma unroll
            for (int p = 0; p < LPASS + HPASS; ++p) {
                const int hr = ly + (p - LPASS) * LY;  // halo passes: halo row hr, tile row TILE_M + hr
                const int r = p < LPASS ? ly + p * LY : TILE_M + hr;
                const int m = m0 + r;
                const bool rok = m < M && (p < LPASS || (halo && hr < hneed));
                const unsigned char* rowp = reinterpret_cast<const unsigned char*>(src + (long long)(rok ? m : 0) * N);
                const unsigned char* seg = rowp + (long long)n0 * ELEM_BYTES;
                const int sh = (int)((size_t)seg & (VB - 1));
                const unsigned char* a0 = seg - sh + lx * VB;
                const unsigned char* end = rowp + (long long)nend * ELEM_BYTES;
                cur[p].w = (rok && a0 < end) ? *reinterpret_cast<const W*>(a0) : W();
                ext[p].w = (edge_lane && rok && a0 + VB < end) ? *reinterpret_cast<const W*>(a0 + VB) : W();
                shs[p] = sh;
            }
#pragma unroll
            for (int p = 0; p < LPASS + HPASS; ++p) {
                VecU nx = ap_next_lane(cur[p]);
                if (edge_lane) nx = ext[p];
                VecU v;
                ap_funnel(v, cur[p], nx, shs[p]);
                const int hr = ly + (p - LPASS) * LY;
                if (p < LPASS || hr < HROWS)
                    *reinterpret_cast<W*>(tile + SMEM_OFF(p < LPASS ? ly + p * LY : TILE_M + hr, lx * VEC)) = v.w;
            }
        }
#else
        {
            // rows are whole vectors: one predicated vector load per pass, all passes in flight
            const int n = n0 + lx * VEC;
            const T* p0 = src + (long long)(m0 + ly) * N + n;
            const long long step = (long long)LY * N;
            W regs[LPASS];
#pragma unroll
            for (int p = 0; p < LPASS; ++p)
                regs[p] = (n < N && m0 + ly + p * LY < M) ? *reinterpret_cast<const W*>(p0 + p * step) : W();
            // st.shared of VB bytes: lane writes elements (ly + p*LY, lx*VEC .. +VEC)
#pragma unroll
            for (int p = 0; p < LPASS; ++p) *reinterpret_cast<W*>(tile + SMEM_OFF(ly + p * LY, lx * VEC)) = regs[p];
        }
#endif
        __syncthreads();
#if READOUT == 2
        {
            const int warp = tid >> 5, lq = lane & 3, li = lane >> 3, lj = lane & 7;
            const int lrow = 8 * (lj >> 1) + 2 * ((li + (lj >> 1)) & 3) + (lj & 1);
            const unsigned base = (unsigned)__cvta_generic_to_shared(tile);
#pragma unroll
            for (int p = 0; p < UNITS2 / WARPS; ++p) {
                const int u = warp + p * WARPS;
                const int a = u % RM2, cb = u / RM2;
                const unsigned addr = base + (unsigned)(SMEM_OFF(32 * a + lrow, 8 * cb) * ELEM_BYTES);
                ap_u32 d[4];
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                             : "r"(addr)
                             : "memory");
                // d[i] holds column 8cb + lane/4, rows 32a + 8lq + 2((i + lq) & 3) + {0, 1}: rotate so that
                // word k holds rows 8lq + 2k, 2k + 1, the lane's 16-byte output vector in order
                VecU o;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    ap_u32 x = d[k];
#pragma unroll
                    for (int j = 1; j < 4; ++j)
                        if (lq == j) x = d[(k - j) & 3];
                    o.u[k] = x;
                }
                const int n = n0 + 8 * cb + (lane >> 2);
                const int e0 = 32 * a + 8 * lq;
                if (n < N) {
                    T* row = dst + (long long)n * M + m0;
                    const int mvalid = min(TILE_M, M - m0);
#if MISALIGNED  // an output pointer off the vector grid (legal() asks for M % 8 == 0): element stores
                    if (e0 + VEC <= mvalid && ((size_t)(row + e0) & (VB - 1)) == 0)
                        ap_store(row + e0, o);
                    else
                        ap_put_part(row, e0, mvalid, o);
#else
                    if (e0 < mvalid) ap_store(row + e0, o);
#endif
                }
            }
        }
#elif READOUT == 1
#if HALO && RT_SHIFT
        if (halo) {
            ap_gather_shifted(tile, dst, n0, N, M, m0, sx, sy);
        } else
#elif RT_WINDOW
        if (halo) {
            // dst mod 16 (the batch's output pointer): the pointer parameter's low bits plus an integer
            const unsigned dst_lo = (unsigned)(((size_t)out + (unsigned long long)b * M * N) & 15);
#ifdef RT_R  // (a test build: one residue only)
            if ((M & 15) == RT_R) ap_rt_window<RT_R>(tile, dst, dst_lo, n0, N, M, m0, sx, sy);
#else
            switch (M & 15) {  // grid-uniform: one instance of the window read-out per residue
#define AP_RW(R) \
    case R: ap_rt_window<R>(tile, dst, dst_lo, n0, N, M, m0, sx, sy); break;
                AP_RW(0) AP_RW(1) AP_RW(2) AP_RW(3) AP_RW(4) AP_RW(5) AP_RW(6) AP_RW(7)
                AP_RW(8) AP_RW(9) AP_RW(10) AP_RW(11) AP_RW(12) AP_RW(13) AP_RW(14) AP_RW(15)
#undef AP_RW
            }
#endif
        } else
#elif HALO
        if (halo) {
#pragma unroll
            for (int p = 0; p < RPASS; ++p) {
                const int nn = (sy + p * SY) * G;
                ap_u32 w[VEC], x[VEC];
                // VEC ld.shared of 4 bytes: tile row sx*VEC + v, columns nn .. nn + G - 1
#pragma unroll
                for (int v = 0; v < VEC; ++v) w[v] = *reinterpret_cast<const ap_u32*>(tile + SMEM_OFF(sx * VEC + v, nn));
                // a segment's last lane: the group after ours too (the halo rows at the end)
#pragma unroll
                for (int v = 0; v < VEC; ++v)
                    x[v] = edge ? *reinterpret_cast<const ap_u32*>(tile + SMEM_OFF((sx + 1) * VEC + v, nn)) : 0u;
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    VecU o, xo;
                    ap_rt(o, w, g);
                    ap_rt(xo, x, g);
                    ap_put(dst, n0 + nn + g, N, M, m0, sx * VEC, head, edge, o, xo);
                }
            }
        } else
#endif
#pragma unroll
        for (int p = 0; p < RPASS; ++p) {  // output rows on the vector grid
            const int nn = (sy + p * SY) * G;
            ap_u32 w[VEC];
            // VEC ld.shared of 4 bytes: tile row sx*VEC + v, columns nn .. nn + G - 1
#pragma unroll
            for (int v = 0; v < VEC; ++v) w[v] = *reinterpret_cast<const ap_u32*>(tile + SMEM_OFF(sx * VEC + v, nn));
#pragma unroll
            for (int g = 0; g < G; ++g) {
                VecU o;
                ap_rt(o, w, g);
                ap_put_grid(dst, n0 + nn + g, N, M, m0, sx * VEC, o);
            }
        }
#else
#if HALO
        if (halo) {
            ap_gather_shifted(tile, dst, n0, N, M, m0, sx, sy);
        } else
#endif
#pragma unroll
        for (int p = 0; p < SPASS; ++p) {
            const int nn = sy + p * SY;
            VecU o;
            // VEC ld.shared of ELEM_BYTES each, down tile column nn: the bank-sensitive walk
#pragma unroll
            for (int v = 0; v < VEC; ++v) o.e[v] = tile[SMEM_OFF(sx * VEC + v, nn)];
            ap_put_grid(dst, n0 + nn, N, M, m0, sx * VEC, o);  // output rows on the vector grid here
        }
#endif
    }
}
#endif  // SCALAR_EDGE
