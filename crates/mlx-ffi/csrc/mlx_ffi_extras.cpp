/* See mlx_ffi_extras.h. */
#include "mlx_ffi_extras.h"

#include "mlx/allocator.h"
#include "mlx/c/error.h"
#include "mlx/c/private/mlx.h"

extern "C" mlx_array mlx_ffi_array_new_allocated(const int* shape, int dim, mlx_dtype dtype) {
  try {
    mlx::core::Shape cpp_shape(shape, shape + dim);
    mlx::core::Dtype cpp_dtype = mlx_dtype_to_cpp(dtype);
    size_t bytes = mlx::core::size_of(cpp_dtype);
    for (auto extent : cpp_shape) {
      if (extent < 0) {
        throw std::invalid_argument("[mlx_ffi_array_new_allocated] negative extent");
      }
      bytes *= static_cast<size_t>(extent);
    }
    return mlx_array_new_(mlx::core::array(mlx::core::allocator::malloc(bytes), cpp_shape, cpp_dtype));
  } catch (std::exception& e) {
    mlx_error(e.what());
    return mlx_array_new_();
  }
}
