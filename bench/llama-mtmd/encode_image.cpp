// llama.cpp's vision encoder (mtmd's clip, gemma4v / gemma4uv graphs) timed on pixels the
// reference's image processor produced, for `cargo xtask bench e2e`.
//
//   encode_image --mmproj FILE.gguf --pixels FILE [--pixels FILE]... [--threads N] [--runs N]
//                [--image-max-tokens N] [--image-min-tokens N] [--source-size WxH]...
//                [--out FILE.safetensors]
//
// Loading (timed as `load_seconds`): `clip_init` on the GGUF mmproj with mtmd's default context
// settings (CPU, flash attention `auto`, warm-up on), except --image-max-tokens and
// --image-min-tokens, which set mtmd's own soft-token limits (`image_max_tokens`,
// `image_min_tokens`, as `llama-mtmd-cli --image-max-tokens` and `--image-min-tokens` do; the
// gemma4 defaults are 1120 and 70). Each run (timed): `clip_image_encode` of
// every image, one call per image, on --threads threads: the image encode alone, without
// decoding or resizing (the pixels are given, so that every side encodes the same values).
//
// A pixels file (written by `bench_e2e.py pixels`): the 8 bytes "GVPIXF32", the width and the
// height as little-endian uint32, then width × height × 3 float32 values in [0, 1], row-major,
// RGB interleaved: what clip's `clip_image_f32` holds after llama.cpp's own preprocessing with
// the checkpoint's mean 0 and std 1 (the gemma4 graphs map them to [-1, 1] themselves).
//
// --source-size, once per --pixels: the size of the image file those pixels were made from.
// For each, llama.cpp's own gemma4 preprocessing (mtmd's dynamic-size resize under the limits
// above, run on a placeholder image of that size: sizes only, no pixels) gives the soft tokens
// llama.cpp itself would encode that file into, printed as `own_soft_tokens` beside the
// `soft_tokens` of the given pixels.
//
// Prints one JSON line in the format of our `bench_encode` example: load seconds, per-run
// seconds, their median, output tokens per image, the features' shape, the peak RSS (VmHWM).
// --out saves the last run's features (`features`, float32 [Σ tokens, projection width]) as
// safetensors.

#include "clip.h"
#include "clip-impl.h"
#include "mtmd-image.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char * const USAGE =
    "usage: encode_image --mmproj FILE.gguf --pixels FILE [--pixels FILE]... [--threads N] [--runs N] "
    "[--image-max-tokens N] [--image-min-tokens N] [--source-size WxH]... [--out FILE.safetensors]";

struct Args {
    std::string mmproj;
    std::vector<std::string> pixels;
    int threads = 1;
    int runs = 3;
    int image_max_tokens = -1;
    int image_min_tokens = -1;
    std::vector<clip_image_size> source_sizes;
    std::string out;
};

int positive(const std::string & flag, const std::string & text) {
    char * end = nullptr;
    const long n = std::strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || n <= 0 || n > 1 << 20) {
        throw std::runtime_error(flag + ": `" + text + "` is not a positive integer");
    }
    return static_cast<int>(n);
}

// `WxH`, each a positive integer.
clip_image_size image_size(const std::string & flag, const std::string & text) {
    const size_t x = text.find('x');
    if (x == std::string::npos) {
        throw std::runtime_error(flag + ": `" + text + "` is not WIDTHxHEIGHT");
    }
    return {positive(flag, text.substr(0, x)), positive(flag, text.substr(x + 1))};
}

Args parse(int argc, char ** argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                throw std::runtime_error(flag + " needs a value\n" + USAGE);
            }
            return argv[++i];
        };
        if (flag == "--mmproj") {
            args.mmproj = value();
        } else if (flag == "--pixels") {
            args.pixels.push_back(value());
        } else if (flag == "--threads") {
            args.threads = positive(flag, value());
        } else if (flag == "--runs") {
            args.runs = positive(flag, value());
        } else if (flag == "--image-max-tokens") {
            args.image_max_tokens = positive(flag, value());
        } else if (flag == "--image-min-tokens") {
            args.image_min_tokens = positive(flag, value());
        } else if (flag == "--source-size") {
            args.source_sizes.push_back(image_size(flag, value()));
        } else if (flag == "--out") {
            args.out = value();
        } else {
            throw std::runtime_error("unknown argument `" + flag + "`\n" + USAGE);
        }
    }
    if (args.mmproj.empty() || args.pixels.empty()) {
        throw std::runtime_error(std::string("--mmproj and at least one --pixels are required\n") + USAGE);
    }
    if (!args.source_sizes.empty() && args.source_sizes.size() != args.pixels.size()) {
        throw std::runtime_error("--source-size: give one per --pixels, or none");
    }
    return args;
}

// One pixels file (see the header comment) as clip's float image.
clip_image_f32 read_pixels(const std::string & path) {
    std::ifstream file(path, std::ios::binary);
    char magic[8];
    uint32_t size[2];
    if (!file.read(magic, 8) || std::memcmp(magic, "GVPIXF32", 8) != 0 ||
        !file.read(reinterpret_cast<char *>(size), sizeof size)) {
        throw std::runtime_error(path + ": not a pixels file (GVPIXF32 header)");
    }
    if (size[0] == 0 || size[1] == 0 || size[0] > 46000 || size[1] > 46000) {
        throw std::runtime_error(path + ": image size out of range");
    }
    std::vector<float> values(static_cast<size_t>(size[0]) * size[1] * 3);
    if (!file.read(reinterpret_cast<char *>(values.data()), static_cast<std::streamsize>(values.size() * 4))) {
        throw std::runtime_error(path + ": fewer values than width × height × 3");
    }
    clip_image_f32 image;
    image.set_size({static_cast<int>(size[0]), static_cast<int>(size[1])}, false, false);
    image.cpy_buf(values);
    return image;
}

// `features` as a one-tensor safetensors file.
void save_features(const std::string & path, const std::vector<float> & values, size_t rows, size_t width) {
    std::ostringstream header;
    header << "{\"features\":{\"dtype\":\"F32\",\"shape\":[" << rows << "," << width << "],\"data_offsets\":[0,"
           << values.size() * 4 << "]}}";
    std::string text = header.str();
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t length = text.size();
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char *>(&length), 8);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    file.write(reinterpret_cast<const char *>(values.data()), static_cast<std::streamsize>(values.size() * 4));
    if (!file) {
        throw std::runtime_error("writing " + path);
    }
}

// The process's peak resident set (VmHWM) in bytes, or -1.
long long peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoll(line.substr(6)) * 1024;
        }
    }
    return -1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The soft tokens llama.cpp's own preprocessing makes of an image of `size` (a placeholder: the
// resize computes the target size and touches no pixels).
int own_soft_tokens(clip_ctx * ctx, clip_image_size size) {
    clip_image_u8 placeholder;
    placeholder.set_size(size, true);
    const mtmd_image_preproc_out out = mtmd_image_preprocessor_dyn_size(ctx).preprocess(placeholder);
    if (out.entries.size() != 1) {
        throw std::runtime_error("llama.cpp's preprocessing made " + std::to_string(out.entries.size()) + " images");
    }
    return clip_n_output_tokens(ctx, &out.entries[0]);
}

template <typename T> std::string join(const std::vector<T> & values) {
    std::ostringstream out;
    out.precision(6);
    out << std::fixed;
    for (size_t i = 0; i < values.size(); ++i) {
        out << (i ? ", " : "") << values[i];
    }
    return out.str();
}

void bench(const Args & args) {
    std::vector<clip_image_f32> images;
    for (const auto & path : args.pixels) {
        images.push_back(read_pixels(path));
    }
    const auto start = std::chrono::steady_clock::now();
    clip_context_params params{};
    params.use_gpu = false;
    params.device = nullptr;
    params.flash_attn_type = CLIP_FLASH_ATTN_TYPE_AUTO;
    params.image_min_tokens = args.image_min_tokens;
    params.image_max_tokens = args.image_max_tokens;
    params.warmup = true;
    const clip_init_result loaded = clip_init(args.mmproj.c_str(), params);
    if (loaded.ctx_v == nullptr) {
        throw std::runtime_error(args.mmproj + ": clip_init found no vision encoder");
    }
    clip_ctx * ctx = loaded.ctx_v;
    const double load_seconds = seconds_since(start);

    const size_t width = static_cast<size_t>(clip_n_mmproj_embd(ctx));
    std::vector<int> tokens;
    for (const auto & image : images) {
        tokens.push_back(clip_n_output_tokens(ctx, &image));
    }
    std::vector<int> own_tokens;
    for (const auto & size : args.source_sizes) {
        own_tokens.push_back(own_soft_tokens(ctx, size));
    }
    std::vector<double> seconds;
    std::vector<float> features;
    for (int run = 0; run < args.runs; ++run) {
        features.clear();
        const auto run_start = std::chrono::steady_clock::now();
        for (const auto & image : images) {
            std::vector<float> out(static_cast<size_t>(clip_n_output_tokens(ctx, &image)) * width);
            if (!clip_image_encode(ctx, args.threads, &image, out)) {
                throw std::runtime_error("clip_image_encode failed");
            }
            features.insert(features.end(), out.begin(), out.end());
        }
        seconds.push_back(seconds_since(run_start));
    }
    const size_t rows = features.size() / width;
    if (!args.out.empty()) {
        save_features(args.out, features, rows, width);
    }
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    std::printf(
        "{\"side\": \"llama.cpp\", \"load_seconds\": %.6f, \"seconds\": [%s], \"median\": %.6f, "
        "\"soft_tokens\": [%s], \"own_soft_tokens\": [%s], \"image_max_tokens\": %d, "
        "\"features_shape\": [%zu, %zu], \"threads\": %d, \"peak_rss_bytes\": %lld}\n",
        load_seconds, join(seconds).c_str(), sorted[sorted.size() / 2], join(tokens).c_str(),
        join(own_tokens).c_str(), args.image_max_tokens, rows, width, args.threads, peak_rss_bytes());
    clip_free(ctx);
}

}  // namespace

int main(int argc, char ** argv) {
    try {
        bench(parse(argc, argv));
        return 0;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
