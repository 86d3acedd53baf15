// autopad.cuh: what a kernel written on autopad.CudaKernel needs to index its tuned shared-memory tile.
//
// The base spec compiles the kernel with every tunable constant as a #define (TILE, PAD, ... as named in
// the spec's SPACE) and the layout's parameters under fixed names:
//   AP_ROWS, AP_COLS        the tile's logical shape (elements)
//   AP_PAD                  elements added to each row
//   AP_SW_VEC, AP_SW_PER_PHASE, AP_SW_MAX_PHASE   the XOR swizzle (AP_SW_MAX_PHASE = 1: none)
//   AP_ELEM_BYTES           bytes per element
//   AP_SMEM_ELEMS           elements the tile occupies: declare  __shared__ T tile[AP_SMEM_ELEMS];
// AP_OFF(r, c) is autopad.layouts' one formula, in elements (see common.cuh): the same arithmetic the
// model scores, so what the tuner predicts is what the kernel does.
#pragma once
#include "common.cuh"

#ifndef AP_PAD
#define AP_PAD 0
#endif
#ifndef AP_SW_VEC
#define AP_SW_VEC 1
#endif
#ifndef AP_SW_PER_PHASE
#define AP_SW_PER_PHASE 1
#endif
#ifndef AP_SW_MAX_PHASE
#define AP_SW_MAX_PHASE 1
#endif

#define AP_OFF(r, c) AP_SMEM_OFF(r, c, AP_COLS, AP_PAD, AP_SW_VEC, AP_SW_PER_PHASE, AP_SW_MAX_PHASE)
