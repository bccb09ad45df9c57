/*
 * Force-included into every mlx-c translation unit by mlx-ffi's build script. It adapts mlx-c
 * 0.7.0's sources, unchanged, to the MLX and the standard library they are compiled against.
 *
 * 1. std::format. mlx-c formats a few error messages with it. Standard libraries without
 *    <format> (libstdc++ before GCC 13) lack it; this header then supplies a minimal
 *    replacement that substitutes each "{}" with the next argument, which is all mlx-c's format
 *    strings use. Where the standard library has std::format, this part is inert.
 *
 * 2. mlx::core::gather_qmm. MLX 0.32.4 inserted a `global_scale` parameter before
 *    `sorted_indices`; mlx-c 0.7.0 calls the earlier signature. For MLX >= 0.32.4 this header
 *    declares that earlier signature as an inline overload forwarding with no global scale,
 *    which is what the earlier function computed. Against older MLX it is inert.
 */
#ifndef MLX_FFI_MLX_COMPAT_H
#define MLX_FFI_MLX_COMPAT_H
#ifdef __cplusplus

#include <version>
#ifndef __cpp_lib_format
#include <sstream>
#include <string>
#include <string_view>

namespace std {
template <class... Args>
inline string format(string_view fmt, const Args&... args) {
  ostringstream out;
  auto emit = [&out, &fmt](const auto& arg) {
    const auto at = fmt.find("{}");
    if (at == string_view::npos) {
      return;
    }
    out << fmt.substr(0, at) << arg;
    fmt.remove_prefix(at + 2);
  };
  (emit(args), ...);
  out << fmt;
  return out.str();
}
} // namespace std
#endif /* __cpp_lib_format */

#include "mlx/version.h"
#if MLX_VERSION_NUMERIC >= 32004
#include "mlx/ops.h"

namespace mlx::core {
inline array gather_qmm(
    const array& x,
    const array& w,
    const array& scales,
    const std::optional<array>& biases,
    std::optional<array> lhs_indices,
    std::optional<array> rhs_indices,
    bool transpose,
    std::optional<int> group_size,
    std::optional<int> bits,
    const std::string& mode,
    bool sorted_indices,
    StreamOrDevice s) {
  return gather_qmm(
      x,
      w,
      scales,
      biases,
      std::move(lhs_indices),
      std::move(rhs_indices),
      transpose,
      group_size,
      bits,
      mode,
      std::nullopt,
      sorted_indices,
      s);
}
} // namespace mlx::core
#endif /* MLX_VERSION_NUMERIC >= 32004 */

#endif /* __cplusplus */
#endif /* MLX_FFI_MLX_COMPAT_H */
