// Notes are facts (a kind, numbers, words) that the renderers phrase: every kind a
// pipeline records has its sentence, and the facts are there to be read.
#include <catch2/catch.hpp>

#include <set>

#include "attn_trace/permutation.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"

using namespace attn_trace;

namespace {

Problem problem(const std::string& json) { return parse_problem(json, "notes.json", true); }

void collect(const Trace& trace, std::set<NoteKind>& kinds) {
    for (const Note& note : trace.notes) {
        INFO("kind " << static_cast<int>(note.kind));
        CHECK_FALSE(note_text(note).starts_with("note of an unknown kind"));
        kinds.insert(note.kind);
    }
}

}  // namespace

TEST_CASE("every kind of note the pipelines record has its sentence", "[notes]") {
    std::set<NoteKind> kinds;
    const std::string gqa = R"("Q": {"random": {"shape": [3, 8], "seed": 1}}, "K": {"random": {"shape": [5, 4], "seed": 2}},
                               "V": {"random": {"shape": [5, 4], "seed": 3}}, "heads": 4, "kv_heads": 2)";
    collect(pipeline_full(problem("{" + gqa + R"(, "mask": "causal"})"), {}), kinds);  // causal_alignment, kv_sharing
    collect(pipeline_decode(problem("{" + gqa + R"(, "mask": "window:1"})"), {}, DecodeOptions{.prefill = 2, .layers = 1, .bytes = std::nullopt, .tokens = std::nullopt}), kinds);  // decode, prefill, cache_offset, ...
    collect(pipeline_tiled(problem(R"({"Q": {"random": {"shape": [40, 2], "seed": 1}}, "K": {"random": {"shape": [40, 2], "seed": 2}},
                                       "V": {"random": {"shape": [40, 2], "seed": 3}}, "mask": "causal"})"),
                           {}, TiledOptions{1, 1}),
            kinds);  // tiled, tile_legend, tile_skipped, more_tiles_skipped
    collect(pipeline_fast(problem(R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [[1]], "mask": {"key_valid": [false]}, "empty_rows": "zero"})"), {}, {}),
            kinds);  // fast_path, empty_rows
    collect(pipeline_full(problem(R"({"Q": [[1, "nan"]], "K": [[1, 0]], "V": [[1]]})"), {}), kinds);  // nonfinite_inputs
    collect(pipeline_full(problem(R"({"Q": [[1e308]], "K": [[1e308]], "V": [[1]], "allow_nonfinite": true})"), {}), kinds);  // overflow
    collect(pipeline_full(problem(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "dropout": {"p": 0.5, "mode": "train"}})"), {}), kinds);  // dropout_train
    collect(pipeline_full(problem(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "dropout": {"p": 0.5}})"), {}), kinds);  // dropout_eval
    collect(pipeline_decode(problem(R"({"Q": {"random": {"shape": [3, 4], "seed": 1}}, "K": {"random": {"shape": [3, 4], "seed": 2}}, "V": [[1], [2], [3]],
                                        "rope": {"scaling": {"type": "dynamic", "factor": 2, "original_max_position_embeddings": 2}}})"),
                            {}, {}),
            kinds);  // dynamic_rope_decode
    Problem from_bf16 = problem(R"({"Q": [[1]], "K": [[1]], "V": [[1]]})");
    from_bf16.checkpoint_dtype = Dtype::bf16;  // as a model directory of bf16 weights sets it
    collect(pipeline_full(from_bf16, RunOptions{Dtype::f16}), kinds);  // checkpoint_rounded
    CHECK(pipeline_full(from_bf16, RunOptions{Dtype::bf16}).notes_of(NoteKind::checkpoint_rounded).empty());  // bf16 keeps bf16 weights exact
    const Problem mla = load_problem(ATTN_TRACE_SOURCE_DIR "/examples/mla_small.json");
    collect(pipeline_full(mla, {}), kinds);                   // mla
    collect(pipeline_decode(mla, {}, {}), kinds);             // mla_cache_size
    collect(pipeline_decode(load_problem(ATTN_TRACE_SOURCE_DIR "/tests/models/gemma2/problem.json"), {}, {}), kinds);  // model_cache_size
    const Problem two = problem(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]})");
    collect(permutation_trace(two, {}, PermuteOptions{{1, 0}, false}), kinds);  // permutation
    // grad --tiled compares with the untiled gradients only up to 2048² scores: one query
    // over 2048² + 1 keys, in one tile, is past that.
    const std::string many_keys = R"({"Q": [[1]], "K": {"random": {"shape": [4194305, 1], "seed": 2}},
                                      "V": {"random": {"shape": [4194305, 1], "seed": 3}}})";
    collect(pipeline_grad(problem(many_keys), {}, GradOptions{"", std::nullopt, TiledOptions{1, 4194305}, std::nullopt}), kinds);  // grad_tiled_unchecked
    for (NoteKind kind : {NoteKind::causal_alignment, NoteKind::kv_sharing, NoteKind::decode, NoteKind::prefill, NoteKind::cache_offset, NoteKind::decode_reference, NoteKind::cache_heads, NoteKind::kv_cache_size, NoteKind::kv_cache_sharing, NoteKind::tiled, NoteKind::tile_legend, NoteKind::tile_skipped, NoteKind::more_tiles_skipped, NoteKind::fast_path, NoteKind::empty_rows, NoteKind::nonfinite_inputs, NoteKind::overflow, NoteKind::dropout_train, NoteKind::dropout_eval, NoteKind::mla, NoteKind::mla_cache_size, NoteKind::model_cache_size, NoteKind::permutation, NoteKind::grad_tiled_unchecked, NoteKind::rolling_cache, NoteKind::dynamic_rope_decode, NoteKind::checkpoint_rounded}) {
        INFO("kind " << static_cast<int>(kind));
        CHECK(kinds.count(kind) == 1);
    }
    CHECK(kinds.size() == static_cast<std::size_t>(NoteKind::mla) + 1);  // every kind, the last one included
}

TEST_CASE("a note's facts are numbers and words, not prose", "[notes]") {
    const Trace decode = pipeline_decode(problem(R"({"Q": {"random": {"shape": [3, 4], "seed": 1}}, "K": {"random": {"shape": [3, 4], "seed": 2}},
                                                    "V": {"random": {"shape": [3, 4], "seed": 3}}})"),
                                         {}, DecodeOptions{.layers = 32, .bytes = 2.0, .tokens = 4096});
    const auto size = decode.notes_of(NoteKind::kv_cache_size);
    REQUIRE(size.size() == 1);
    CHECK(size[0]->number("bytes_per_token") == 32 * 2 * 4 * 2);  // 2 · layers · H_kv · d_k · bytes
    CHECK(size[0]->number("tokens") == 4096);
    CHECK_THAT(note_text(*size[0]), Catch::EndsWith("4096 tokens → 2,097,152 bytes = 2.10 MB (2.00 MiB)"));
    CHECK_THAT(render_json(decode, {}), Catch::Contains(R"("KV cache per sequence: 2 · layers · H_kv · d_k · bytes = 2 · 32 · 1 · 4 · 2 = 512 bytes per token)"));
}
