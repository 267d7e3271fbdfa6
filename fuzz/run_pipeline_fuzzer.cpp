// Fuzz target 2: the whole `run` pipeline on what the loader accepts. A problem
// that loads and is small (fuzz_limits.hpp) goes through the full trace in f64
// and f32, decode, tiled, the fast path, and every renderer; each may refuse it
// with an attn_trace::Error (an option it does not support), nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"
#include "fuzz_limits.hpp"

namespace {

using namespace attn_trace;

// Runs one pipeline; a refusal (InputError and kin) is an answer, not a finding.
template <typename Pipeline>
void attempt(Pipeline&& pipeline) {
    try {
        pipeline();
    } catch (const Error&) {
    }
}

void render_all(const Trace& trace) {
    RenderOptions options;
    options.full = true;
    for (const auto& format : render_formats()) attempt([&] { (void)render(trace, format, options); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Problem problem;
    try {
        problem = parse_problem(text, "fuzz.json", fuzz::allow_nonfinite(text));
    } catch (const Error&) {
        return 0;
    }
    if (!fuzz::small_enough(problem)) return 0;
    // The block sizes come from the input's length, so that a saved input replays the same way.
    const TiledOptions tiled{1 + size % 3, 1 + size / 3 % 4};
    for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
        const RunOptions run{dtype, "cpu"};
        attempt([&] { render_all(pipeline_full(problem, run)); });
        attempt([&] { render_all(pipeline_decode(problem, run, DecodeOptions{})); });
        attempt([&] { render_all(pipeline_tiled(problem, run, tiled)); });
        attempt([&] { render_all(pipeline_fast(problem, run, FastPathOptions{2, tiled.block_q, tiled.block_k, "fuzz"})); });
    }
    return 0;
}
