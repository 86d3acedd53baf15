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
