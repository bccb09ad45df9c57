/*
 * Force-included into every mlx-c translation unit by mlx-ffi's build script.
 *
 * mlx-c formats a few error messages with std::format. Standard libraries without <format>
 * (libstdc++ before GCC 13) lack it; this header then supplies a minimal replacement that
 * substitutes each "{}" with the next argument, which is all mlx-c's format strings use.
 * Where the standard library has std::format, the header is inert.
 */
#ifndef MLX_FFI_FORMAT_COMPAT_H
#define MLX_FFI_FORMAT_COMPAT_H
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
#endif /* __cplusplus */
#endif /* MLX_FFI_FORMAT_COMPAT_H */
