// fp32 SIMT GEMM: C[M, N] = A[M, K] @ B[K, N], all row-major, any M, N, K.
//
// A block computes a BM x BN tile of C, walking its K range in steps of BK with two shared-memory buffers
// (the global loads of step k+1 are in flight in registers while step k is computed; one barrier per
// step). A is staged TRANSPOSED (As[k][m]): each thread loads 4 consecutive k of one A row as one 16-byte
// global load and writes them as 4 single-word st.shared down column m of As; that column write is the
// bank-sensitive access (rows of As are BM words apart: with BM = 128 all of a thread pair's k rows share
// a bank unless PAD_A or the swizzle moves them). B is staged as is (Bs[k][n], one 16-byte st.shared per
// vector). The inner product reads TM/4 16-byte vectors of As[k][.] and TN/4 of Bs[k][.] per k, for
// TM x TN FMAs. Thread (tx, ty) owns rows ty*4 + i*(TY*4) + {0..3} and columns tx*4 + j*(TX*4) + {0..3}.
//
// THREAD_MAP places a warp's lanes on (tx, ty). 0: tx = tid % TX (a warp is 32 / TX rows of TX threads).
// 1: lane bit 0 is ty's low bit and the next bits are tx, so lanes n and n^1 read the same Bs vector and
// lanes n and n^2 the same As vector: every 16-byte fragment load pairs up, its 8-lane phases merge into
// two of 16 lanes, 2 wavefronts instead of 4 for B (sm_90's rule; autopad.model counts it).
//
// SPLIT_K: blockIdx.z takes K range [z * KS, min(K, z * KS + KS)) and writes its partial tile to slice z
// of a workspace [SPLIT_K, M, N]; matmul_splitk_reduce then sums the slices into C.
//
// Whole-step loads: where every block's K range is a multiple of BK and rows are 16-byte aligned (K, N and
// KS multiples of 4, K and KS of BK), every block, edge tiles included, loads whole 16-byte vectors with no
// bounds check: a row past M reads row M - 1 and a vector past N the last one, which only feed accumulators
// that are never stored. Otherwise every block checks every element. The choice is the same for the whole
// grid on purpose: when interior blocks ran the unchecked loop and edge blocks the checked one (an SM then
// runs two ~20 KB loop bodies side by side, the checked one ~24% more instructions), 8x8-thread-tile
// candidates at 1536 x 1000 x 2000 measured a median 1.17x (up to 1.33x) their time with every block on the
// unchecked loop, and the same at 1536 x 1024 x 2000, which has no edge tiles (H200 run 59 of 2026-12-02).
//
// Macros: BM, BN, BK, TM, TN, MIN_BLOCKS, THREAD_MAP, SPLIT_K and, per operand X in {A, B}, PAD_X,
// SW_VEC_X, SW_PER_PHASE_X, SW_MAX_PHASE_X (the shared formula in common.cuh, one per tile).
#include "common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef THREAD_MAP
#define THREAD_MAP 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef PAD_A
#define PAD_A 0
#endif
#ifndef SW_VEC_A
#define SW_VEC_A 1
#endif
#ifndef SW_PER_PHASE_A
#define SW_PER_PHASE_A 1
#endif
#ifndef SW_MAX_PHASE_A
#define SW_MAX_PHASE_A 1
#endif
#ifndef PAD_B
#define PAD_B 0
#endif
#ifndef SW_VEC_B
#define SW_VEC_B 1
#endif
#ifndef SW_PER_PHASE_B
#define SW_PER_PHASE_B 1
#endif
#ifndef SW_MAX_PHASE_B
#define SW_MAX_PHASE_B 1
#endif

// As is a BK x BM tile (row = k, col = m); Bs a BK x BN tile (row = k, col = n)
#define SMEM_OFF_A(r, c) AP_SMEM_OFF(r, c, BM, PAD_A, SW_VEC_A, SW_PER_PHASE_A, SW_MAX_PHASE_A)
#define SMEM_OFF_B(r, c) AP_SMEM_OFF(r, c, BN, PAD_B, SW_VEC_B, SW_PER_PHASE_B, SW_MAX_PHASE_B)

#define TX (BN / TN)
#define TY (BM / TM)
#define THREADS (TX * TY)
#define KV (BK / 4)                       // 16-byte vectors per A row segment
#define NV (BN / 4)                       // 16-byte vectors per B row segment
#define A_LOADS (BM * KV / THREADS)
#define B_LOADS (BK * NV / THREADS)
// each buffer starts on a 128-byte boundary, so both buffers see the same banks (the model scores one)
#define A_FLOATS (((BK * (BM + PAD_A)) + 31) / 32 * 32)
#define B_FLOATS (((BK * (BN + PAD_B)) + 31) / 32 * 32)
// THREAD_MAP 1: a warp is WY x WX threads (WX along N); lane bit 0 -> ty, bits 1..log2(WX) -> tx
#define WX (TX < 16 ? TX : 16)
#define WY (32 / WX)
#define LOG2_WX (WX == 16 ? 4 : (WX == 8 ? 3 : (WX == 4 ? 2 : 1)))

static_assert(BK % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "4-wide vectors");
static_assert(BM % TM == 0 && BN % TN == 0, "thread tile must divide block tile");
static_assert((BM * KV) % THREADS == 0 && A_LOADS >= 1, "A tile loads do not divide among threads");
static_assert((BK * NV) % THREADS == 0 && B_LOADS >= 1, "B tile loads do not divide among threads");
static_assert(THREAD_MAP == 0 || (TX % WX == 0 && TY % WY == 0 && WX >= 2), "warp shape must tile the block");
static_assert(THREADS % 32 == 0, "whole warps: the k-loop's __syncwarp() takes the full mask");

struct __align__(16) f4 { float x, y, z, w; };

// Device functions, not lambdas: NVRTC (the GPU machine's run-time compiler) treats an unannotated lambda
// as host code and rejects it ("host functions are not allowed in JIT mode"); nvcc accepted it.

// One BK step of A and B from global memory into registers (16-byte vectors). FULL: the block's K range is
// whole steps and the rows 16-byte aligned, so no load needs a bounds check (rows past M and vectors past
// N are clamped onto the last ones: see the header).
template <bool FULL>
__device__ __forceinline__ void load_global(f4 (&ra)[A_LOADS], f4 (&rb)[B_LOADS], const float* __restrict__ A,
                                            const float* __restrict__ B, int tid, int m0, int n0, int k0,
                                            int k_end, int M, int N, int K, bool vec_a, bool vec_b) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        // FULL: a row past M reads row M - 1 (it feeds only accumulator rows that are never stored)
        const int r = FULL ? min(m0 + idx / KV, M - 1) : m0 + idx / KV, k = k0 + (idx % KV) * 4;
        const float* p = A + (long long)r * K;
        if (FULL || (vec_a && r < M && k + 3 < k_end)) {
            ra[l] = *reinterpret_cast<const f4*>(p + k);
        } else {
            ra[l].x = (r < M && k < k_end) ? p[k] : 0.f;
            ra[l].y = (r < M && k + 1 < k_end) ? p[k + 1] : 0.f;
            ra[l].z = (r < M && k + 2 < k_end) ? p[k + 2] : 0.f;
            ra[l].w = (r < M && k + 3 < k_end) ? p[k + 3] : 0.f;
        }
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        // FULL: a vector past N reads the last one (it feeds only accumulator columns never stored)
        const int k = k0 + idx / NV, c = FULL ? min(n0 + (idx % NV) * 4, N - 4) : n0 + (idx % NV) * 4;
        const float* p = B + (long long)k * N;
        if (FULL || (vec_b && k < k_end && c + 3 < N)) {
            rb[l] = *reinterpret_cast<const f4*>(p + c);
        } else {
            rb[l].x = (k < k_end && c < N) ? p[c] : 0.f;
            rb[l].y = (k < k_end && c + 1 < N) ? p[c + 1] : 0.f;
            rb[l].z = (k < k_end && c + 2 < N) ? p[c + 2] : 0.f;
            rb[l].w = (k < k_end && c + 3 < N) ? p[c + 3] : 0.f;
        }
    }
}

// The registers of one step into shared buffer ``buf``: A transposed (4 single-word stores down column r
// of As: the bank-sensitive write), B as is (one 16-byte store per vector).
__device__ __forceinline__ void store_smem(float* smem, int buf, const f4 (&ra)[A_LOADS], const f4 (&rb)[B_LOADS],
                                           int tid) {
    float* As = smem + buf * (A_FLOATS + B_FLOATS);
    float* Bs = As + A_FLOATS;
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        const int r = idx / KV, k = (idx % KV) * 4;
        As[SMEM_OFF_A(k + 0, r)] = ra[l].x;
        As[SMEM_OFF_A(k + 1, r)] = ra[l].y;
        As[SMEM_OFF_A(k + 2, r)] = ra[l].z;
        As[SMEM_OFF_A(k + 3, r)] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        *reinterpret_cast<f4*>(Bs + SMEM_OFF_B(idx / NV, (idx % NV) * 4)) = rb[l];
    }
}

// The K loop of one block: the loads of step k+1 are in flight in registers while step k is computed from
// shared buffer k & 1; one barrier per step.
template <bool FULL>
__device__ __forceinline__ void mainloop(float (&acc)[TM][TN], float* smem, const float* __restrict__ A,
                                         const float* __restrict__ B, int tid, int tx, int ty, int m0, int n0,
                                         int k_begin, int k_end, int M, int N, int K, bool vec_a, bool vec_b) {
    f4 ra[A_LOADS], rb[B_LOADS];
    const int KT = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    if (KT > 0) {
        load_global<FULL>(ra, rb, A, B, tid, m0, n0, k_begin, k_end, M, N, K, vec_a, vec_b);
        store_smem(smem, 0, ra, rb, tid);
    }
    __syncthreads();
    for (int kt = 0; kt < KT; ++kt) {
        const int cur = kt & 1;
        if (kt + 1 < KT)
            load_global<FULL>(ra, rb, A, B, tid, m0, n0, k_begin + (kt + 1) * BK, k_end, M, N, K, vec_a, vec_b);
        // Keeps those loads here, ahead of the step's FMAs. Without it ptxas (NVRTC 13.0, sm_90) sank the
        // unguarded loop's LDGs behind all but two of the FMAs in 144 of 180 padded builds (and in every
        // 64x128 and 128x64 build), so each k-step waited out a global load: 1.05-1.49x slower (H200 run
        // 51). Memory operations do not cross a warp barrier; with a full mask it costs no instruction.
        __syncwarp();
        const float* As = smem + cur * (A_FLOATS + B_FLOATS);
        const float* Bs = As + A_FLOATS;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM / 4; ++i)
                *reinterpret_cast<f4*>(&a[i * 4]) =
                    *reinterpret_cast<const f4*>(As + SMEM_OFF_A(k, ty * 4 + i * TY * 4));
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                *reinterpret_cast<f4*>(&b[j * 4]) =
                    *reinterpret_cast<const f4*>(Bs + SMEM_OFF_B(k, tx * 4 + j * TX * 4));
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < KT) store_smem(smem, cur ^ 1, ra, rb, tid);
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
matmul_kernel(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N,
              int K, int KS) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
#if THREAD_MAP == 0
    const int tx = tid % TX, ty = tid / TX;
#else
    const int lane = tid & 31, warp = tid >> 5;
    const int tx = (warp % (TX / WX)) * WX + ((lane >> 1) & (WX - 1));
    const int ty = (warp / (TX / WX)) * WY + ((lane & 1) | ((lane >> (1 + LOG2_WX)) << 1));
#endif
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int k_begin = blockIdx.z * KS;
    const int k_end = min(K, k_begin + KS);
    const bool vec_a = (K % 4) == 0, vec_b = (N % 4) == 0;
    // whole steps and aligned rows in every block: no per-element checks in any block's loads (the same
    // answer for the whole grid, so an SM never runs the checked and unchecked loops side by side)
    const bool full = vec_a && vec_b && K % BK == 0 && KS % BK == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    if (full)
        mainloop<true>(acc, smem, A, B, tid, tx, ty, m0, n0, k_begin, k_end, M, N, K, vec_a, vec_b);
    else
        mainloop<false>(acc, smem, A, B, tid, tx, ty, m0, n0, k_begin, k_end, M, N, K, vec_a, vec_b);

    // split-K: slice z of the [SPLIT_K, M, N] workspace; otherwise C itself
    float* Cz = C + (SPLIT_K > 1 ? (long long)blockIdx.z * M * N : 0LL);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = m0 + ty * 4 + (i / 4) * TY * 4 + (i % 4);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const int c = n0 + tx * 4 + j * TX * 4;
            float* p = Cz + (long long)r * N + c;
            if (vec_b && c + 3 < N) {
                f4 v = {acc[i][j * 4], acc[i][j * 4 + 1], acc[i][j * 4 + 2], acc[i][j * 4 + 3]};
                *reinterpret_cast<f4*>(p) = v;
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (c + q < N) p[q] = acc[i][j * 4 + q];
            }
        }
    }
}

// C = sum over z of W[z] (W: [S, M, N] partial products of the split-K kernel); 4 elements per thread
extern "C" __global__ void __launch_bounds__(256)
matmul_splitk_reduce(float* __restrict__ C, const float* __restrict__ W, long long MN, int S) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= MN) return;
    if (MN % 4 == 0) {  // every slice starts 16-byte aligned: vector loads
        f4 s = *reinterpret_cast<const f4*>(W + i);
        for (int z = 1; z < S; ++z) {
            const f4 v = *reinterpret_cast<const f4*>(W + z * MN + i);
            s.x += v.x;
            s.y += v.y;
            s.z += v.z;
            s.w += v.w;
        }
        *reinterpret_cast<f4*>(C + i) = s;
    } else {
        for (long long e = i; e < i + 4 && e < MN; ++e) {
            float s = 0.f;
            for (int z = 0; z < S; ++z) s += W[z * MN + e];
            C[e] = s;
        }
    }
}
