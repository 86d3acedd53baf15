// fp32 SIMT GEMM: C[M, N] = A[M, K] @ B[K, N], all row-major, any M, N, K.
//
// A block computes a BM x BN tile of C, walking K in steps of BK with two shared-memory buffers (the
// global loads of step k+1 are in flight while step k is computed; one barrier per step). A is staged
// TRANSPOSED (As[k][m]): each thread loads 4 consecutive k of one A row as one 16-byte global load and
// writes them as 4 single-word st.shared down column m of As; that column write is the bank-sensitive
// access (rows of As are BM words apart: with BM = 128 all of a thread pair's k rows share a bank unless
// PAD_A or the swizzle moves them). B is staged as is (Bs[k][n], one 16-byte st.shared per vector). The
// inner product reads TM/4 16-byte vectors of As[k][.] and TN/4 of Bs[k][.] per k, for TM x TN FMAs.
// Thread (tx, ty) owns rows ty*4 + i*(TY*4) + {0..3} and columns tx*4 + j*(TX*4) + {0..3}, so each
// 16-byte fragment read is a contiguous, conflict-free row segment when the layout keeps 16-byte chunks.
//
// Macros: BM, BN, BK, TM, TN, MIN_BLOCKS and, per operand X in {A, B}, PAD_X, SW_VEC_X, SW_PER_PHASE_X,
// SW_MAX_PHASE_X (the shared formula in common.cuh, one per tile).
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

static_assert(BK % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "4-wide vectors");
static_assert(BM % TM == 0 && BN % TN == 0, "thread tile must divide block tile");
static_assert((BM * KV) % THREADS == 0 && A_LOADS >= 1, "A tile loads do not divide among threads");
static_assert((BK * NV) % THREADS == 0 && B_LOADS >= 1, "B tile loads do not divide among threads");

struct __align__(16) f4 { float x, y, z, w; };

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
matmul_kernel(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int M, int N,
              int K) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec_a = (K % 4) == 0, vec_b = (N % 4) == 0;

    f4 ra[A_LOADS], rb[B_LOADS];
    auto load_global = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = m0 + idx / KV, k = k0 + (idx % KV) * 4;
            if (vec_a && r < M && k + 3 < K) {
                ra[l] = *reinterpret_cast<const f4*>(A + (long long)r * K + k);
            } else {
                const float* p = A + (long long)r * K;
                ra[l].x = (r < M && k < K) ? p[k] : 0.f;
                ra[l].y = (r < M && k + 1 < K) ? p[k + 1] : 0.f;
                ra[l].z = (r < M && k + 2 < K) ? p[k + 2] : 0.f;
                ra[l].w = (r < M && k + 3 < K) ? p[k + 3] : 0.f;
            }
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int k = k0 + idx / NV, c = n0 + (idx % NV) * 4;
            if (vec_b && k < K && c + 3 < N) {
                rb[l] = *reinterpret_cast<const f4*>(B + (long long)k * N + c);
            } else {
                const float* p = B + (long long)k * N;
                rb[l].x = (k < K && c < N) ? p[c] : 0.f;
                rb[l].y = (k < K && c + 1 < N) ? p[c + 1] : 0.f;
                rb[l].z = (k < K && c + 2 < N) ? p[c + 2] : 0.f;
                rb[l].w = (k < K && c + 3 < N) ? p[c + 3] : 0.f;
            }
        }
    };
    auto store_smem = [&](int buf) {
        float* As = smem + buf * (A_FLOATS + B_FLOATS);
        float* Bs = As + A_FLOATS;
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / KV, k = (idx % KV) * 4;
            // the transposing write: 4 single-word stores down column r of As
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
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int KT = (K + BK - 1) / BK;
    load_global(0);
    store_smem(0);
    __syncthreads();
    for (int kt = 0; kt < KT; ++kt) {
        const int cur = kt & 1;
        if (kt + 1 < KT) load_global((kt + 1) * BK);
        const float* As = smem + cur * (A_FLOATS + B_FLOATS);
        const float* Bs = As + A_FLOATS;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM / 4; ++i)
                *reinterpret_cast<f4*>(&a[i * 4]) = *reinterpret_cast<const f4*>(As + SMEM_OFF_A(k, ty * 4 + i * TY * 4));
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                *reinterpret_cast<f4*>(&b[j * 4]) = *reinterpret_cast<const f4*>(Bs + SMEM_OFF_B(k, tx * 4 + j * TX * 4));
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < KT) store_smem(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = m0 + ty * 4 + (i / 4) * TY * 4 + (i % 4);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const int c = n0 + tx * 4 + j * TX * 4;
            float* p = C + (long long)r * N + c;
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
