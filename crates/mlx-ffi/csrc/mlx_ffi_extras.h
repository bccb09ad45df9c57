/*
 * The functions mlx-ffi adds to mlx-c, compiled into the same library (mlx_ffi_extras.cpp) and
 * bound in the same table. Each follows mlx-c's conventions: failures go to the error handler.
 */
#ifndef MLX_FFI_EXTRAS_H
#define MLX_FFI_EXTRAS_H

#include "mlx/c/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A new array of `shape` (`dim` extents, each >= 0) and `dtype` in a buffer of its own, fresh
 * from MLX's allocator (`allocator::malloc`), with no primitive: it is evaluated, its contents
 * are unspecified, and no other array shares the buffer. An empty handle on failure.
 *
 * mlx_array_new_data* cannot give this on MLX's CPU backend: its allocator cannot adopt a
 * foreign buffer (`make_buffer` returns null), so those constructors copy the data.
 */
mlx_array mlx_ffi_array_new_allocated(const int* shape, int dim, mlx_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
