// Shared by the autopad CUDA templates: the one shared-memory offset formula the model scores.
//
// SMEM_OFF(r, c) is autopad.layouts' formula, in ELEMENTS:
//   r * (COLS + PAD) + (((c / SW_VEC) ^ ((r / SW_PER_PHASE) % SW_MAX_PHASE)) * SW_VEC) + c % SW_VEC
// With SW_MAX_PHASE = 1 the XOR term vanishes and this is plain row padding (the classic [32][33]);
// with PAD = 0 and SW_MAX_PHASE > 1 each row's SW_VEC-element chunks are permuted so that a column walk
// visits a different chunk (and so different banks) on every row. Kernels never index a tile otherwise.
#pragma once

#define AP_SMEM_OFF(r, c, COLS, PAD_, SWV, SWP, SWM) \
    ((r) * ((COLS) + (PAD_)) + (((((c) / (SWV)) ^ (((r) / (SWP)) % (SWM))) * (SWV)) + ((c) % (SWV))))

typedef unsigned char ap_u8;
typedef unsigned short ap_u16;
typedef unsigned int ap_u32;
typedef unsigned long long ap_u64;

// an unsigned integer of N bytes: data movement only needs the bits
template <int N> struct ap_uint;
template <> struct ap_uint<1> { typedef ap_u8 type; };
template <> struct ap_uint<2> { typedef ap_u16 type; };
template <> struct ap_uint<4> { typedef ap_u32 type; };
template <> struct ap_uint<8> { typedef ap_u64 type; };

// Programmatic dependent launch (sm_90): a kernel launched with the programmatic-stream-serialization
// attribute (cuda_runtime.prepare_launch(..., overlap=True)) may start before the kernel ahead of it in
// the stream finishes; AP_GRID_WAIT() blocks until that kernel has completed and its writes are visible,
// so it goes before the first access to what that kernel writes. AP_LAUNCH_DEPENDENTS() in the earlier
// kernel lets the dependent one launch at once. Both are no-ops below sm_90 and without the attribute.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define AP_GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define AP_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define AP_GRID_WAIT()
#define AP_LAUNCH_DEPENDENTS()
#endif
