// The phrasebook: every kind of note the pipelines record, as one sentence for
// people. The facts come from the trace; the words are all here.
#include <fmt/format.h>

#include "attn_trace/mask.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/size_text.hpp"

namespace attn_trace {

namespace {

long long whole(const Note& note, const std::string& key) { return static_cast<long long>(note.number(key)); }

std::string plural(long long count) { return count == 1 ? "" : "s"; }

// " in head 1 of batch 0", where the note names them (only problems with several do).
std::string in_head_of_batch(const Note& note) {
    return (note.has("head") ? fmt::format(" in head {}", whole(note, "head")) : "") +
           (note.has("batch") ? fmt::format(" of batch {}", whole(note, "batch")) : "");
}

std::string causal_alignment(const Note& note) {
    const long long n = whole(note, "n"), m = whole(note, "m");
    if (note.word("alignment") == "upper_left")
        return fmt::format("causal mask with n = {} queries and m = {} keys: top-left alignment, query i reads keys j <= i "
                           "(PyTorch is_causal=True); use causal-bottom-right to align the queries with the end of the keys",
                           n, m);
    return fmt::format("causal mask with n = {} queries and m = {} keys: bottom-right alignment, query i reads keys "
                       "j <= i + {} (the queries are the last {} tokens, as in cached decoding)",
                       n, m, m - n, n);
}

std::string kv_sharing(const Note& note) {
    const long long heads = whole(note, "heads"), kv_heads = whole(note, "kv_heads"), group = heads / kv_heads;
    std::string text = fmt::format("{}: {} query heads share {} KV head{}:", kv_heads == 1 ? "multi-query" : "grouped-query", heads, kv_heads,
                                   plural(kv_heads));
    for (long long g = 0; g < kv_heads; ++g) text += fmt::format("{} query heads {}-{} read KV head {}", g ? ";" : "", g * group, (g + 1) * group - 1, g);
    return text;
}

std::string kv_cache_size(const Note& note) {
    const long long layers = whole(note, "layers"), kv_heads = whole(note, "kv_heads"), d_k = whole(note, "d_k"), d_v = whole(note, "d_v");
    const double bytes = note.number("bytes"), per_token = note.number("bytes_per_token"), tokens = note.number("tokens");
    const std::string formula = d_k == d_v ? fmt::format("2 · layers · H_kv · d_k · bytes = 2 · {} · {} · {} · {:g}", layers, kv_heads, d_k, bytes)
                                           : fmt::format("layers · H_kv · (d_k + d_v) · bytes = {} · {} · ({} + {}) · {:g}", layers, kv_heads, d_k, d_v, bytes);
    return fmt::format("KV cache per sequence: {} = {:g} bytes per token; {:g} tokens → {}", formula, per_token, tokens, bytes_text(per_token * tokens));
}

std::string fast_path(const Note& note) {
    const std::string& reason = note.word("reason");
    const long long workers = whole(note, "workers");
    return fmt::format(
        "fast path{}: fused tiled attention with online softmax on the {} backend (Br = {} queries × Bc = {} keys per tile, {} thread{}); "
        "it held {} of scores at once, where the (n, m) scores of every head would take {}. Shapes per head: "
        "scores, mask, exp and weights ({}, {}) are not kept; row_max and row_sum ({}, 1) are the final running max m and sum ℓ; "
        "out ({}, {})",
        reason.empty() ? "" : " (" + reason + ")", note.word("backend"), whole(note, "block_q"), whole(note, "block_k"), workers, plural(workers),
        size_text(note.number("held_bytes"), ByteUnit::MiB), size_text(note.number("full_bytes"), ByteUnit::GiB), whole(note, "n"), whole(note, "m"), whole(note, "n"),
        whole(note, "n"), whole(note, "d_v"));
}

std::string tiled(const Note& note) {
    const long long heads_run = whole(note, "heads_run");
    return fmt::format("tiled: Br = {} query rows × Bc = {} keys per tile, Tr × Tc = {} × {} tiles per head; "
                       "{} of {} tiles skipped (every score masked){}; {} scores held at once instead of n · m = {}",
                       whole(note, "block_q"), whole(note, "block_k"), whole(note, "Tr"), whole(note, "Tc"), whole(note, "skipped"),
                       whole(note, "Tr") * whole(note, "Tc") * heads_run, heads_run > 1 ? fmt::format(" over {} heads and sequences", heads_run) : "",
                       whole(note, "held"), whole(note, "full"));
}

std::string decode(const Note& note) {
    const long long prefill = whole(note, "prefill");
    const std::string appends = note.has("mla") ? "the latent C_KV[t] and the RoPE key K_R[t] are appended to one cache for every head (c_cache, "
                                                  "kr_cache), each head's keys and values made from it"
                                                : "every KV head appends K[t] and V[t] to its cache";
    return fmt::format("decode: {}one query per step; at step t {}, then "
                       "each query head scores Q[t] against the whole cache (masked: Z = s · Q[t] K_cacheᵀ + M), takes the softmax and mixes the cached values",
                       prefill ? fmt::format("queries 0…{} as one prefill block, then ", prefill - 1) : "", appends);
}

std::string decode_reference(const Note& note) {
    if (!note.has("mask"))
        return "decode is causal by construction (the cache holds only the past), so it equals "
               "the full computation with the causal-bottom-right mask, which max_abs_diff_vs_full compares with";
    return fmt::format("decode is causal by construction; the problem's mask ({}) applies inside the cache, so decode "
                       "equals the full computation with {} + causal-bottom-right, which max_abs_diff_vs_full compares with",
                       note.word("mask"), note.word("mask"));
}

std::string empty_rows(const Note& note) {
    const long long rows = whole(note, "rows");
    const bool zero = note.word("policy") == "zero";
    return fmt::format("{} row{} with no visible key{}: empty_rows = {} ({})", rows, plural(rows), in_head_of_batch(note), note.word("policy"),
                       zero ? "weights and output 0, as PyTorch >= 2.5" : "NaN, as older PyTorch");
}

}  // namespace

std::string permutation(const Note& note) {
    const bool source = note.word("side") == "source";
    const std::string& breakers = note.word("breakers");
    const std::string claim = source ? "out with the source rows permuted = out (the keys and values are a set)"
                                     : "out(P·X) = P·out(X) (the outputs move with their tokens, unchanged in value)";
    const std::string result = fmt::format("the largest difference is {:.3g}", note.number("max_abs_diff"));
    if (breakers.empty())
        return fmt::format("permutation P = [{}] of the {}: nothing here ties a row to its place, so {}; {}{}", note.word("perm"),
                           source ? "source rows" : "tokens", claim, result,
                           note.number("holds") != 0 ? ", rounding only" : fmt::format(", more than rounding ({:.3g}): unexpected", note.number("rounding")));
    return fmt::format("permutation P = [{}] of the {}: {} would hold for a set, but here {} tie{} rows to their places; {}{}", note.word("perm"),
                       source ? "source rows" : "tokens", claim, breakers, breakers.find(';') == std::string::npos ? "s" : "", result,
                       note.number("holds") != 0 ? " (within rounding for this P)" : ": the symmetry is broken");
}

std::string note_text(const Note& note) {
    switch (note.kind) {
        case NoteKind::causal_alignment: return causal_alignment(note);
        case NoteKind::nonfinite_inputs:
            return fmt::format("allow_nonfinite: the inputs hold non-finite numbers ({}, the first); they spread through every step that "
                               "reads them (x · NaN = NaN, inf − inf = NaN), as traced below",
                               note.word("first"));
        case NoteKind::kv_sharing: return kv_sharing(note);
        case NoteKind::overflow: {
            // A half type's overflow is traced by itself (docs/PROBLEM.md#dtype-half-precision); f64 and f32 trace theirs only when allowed.
            const std::string& dtype = note.word("dtype");
            return fmt::format("{}: overflow: {}; it spreads through the steps after it, as traced below",
                               dtype == "f16" || dtype == "bf16" ? dtype + " (traced as the type stores it)" : "allow_nonfinite", overflow_text(note));
        }
        case NoteKind::empty_rows: return empty_rows(note);
        case NoteKind::fast_path: return fast_path(note);
        case NoteKind::tiled: return tiled(note);
        case NoteKind::tile_legend:
            return "tile [qb, kt] = query block qb × key tile kt; Q[a…b] and K[c…d] are the query and key rows "
                   "of the tile (K_g with a subscript is KV head g)";
        case NoteKind::tile_skipped:
            return fmt::format("tile [{}, {}]{}{}: skipped, every score masked (queries {}…{}, keys {}…{})", whole(note, "qb"), whole(note, "kt"),
                               note.has("head") ? fmt::format(", head {}", whole(note, "head")) : "",
                               note.has("batch") ? fmt::format(", batch {}", whole(note, "batch")) : "", whole(note, "first_query"), whole(note, "last_query"), whole(note, "first_key"),
                               whole(note, "last_key"));
        case NoteKind::more_tiles_skipped: return fmt::format("… and {} more skipped tiles", whole(note, "count"));
        case NoteKind::decode: return decode(note);
        case NoteKind::rolling_cache:
            return fmt::format("rolling cache: the window of {} keys ending at the query's own means no later query reads a key more than {} "
                               "positions back, so the cache keeps the last {} keys and values and drops the oldest as each new one arrives "
                               "(each k_cache and v_cache lists what its step evicted); a prefill block reads all its keys, then keeps the last {}",
                               whole(note, "window"), whole(note, "window") - 1, whole(note, "window"), whole(note, "window"));
        case NoteKind::dynamic_rope_decode:
            return fmt::format("dynamic RoPE: each step turns its query and the keys it appends with the base for the length read so far "
                               "(the plain base up to {} positions, as transformers' decode does), and the cached keys keep the angles they "
                               "were appended with; the full pass turns every position with the base of the whole length, so past {} "
                               "positions the two differ and max_abs_diff_vs_full measures by how much",
                               whole(note, "original"), whole(note, "original"));
        case NoteKind::prefill:
            return fmt::format("prefill: the first {} queries as one bottom-right-aligned causal block; its steps carry t = {} and have {} rows",
                               whole(note, "prefill"), whole(note, "prefill") - 1, whole(note, "prefill"));
        case NoteKind::cache_offset:
            return fmt::format("m = {} keys for n = {} queries: the cache starts with the {} keys before the first query, so after step t it holds t + {} keys",
                               whole(note, "m"), whole(note, "n"), whole(note, "offset"), whole(note, "offset") + 1);
        case NoteKind::decode_reference: return decode_reference(note);
        case NoteKind::cache_heads:
            return fmt::format("k_cache and v_cache carry the KV head index: {} caches, each read by {} query heads", whole(note, "kv_heads"),
                               whole(note, "heads") / whole(note, "kv_heads"));
        case NoteKind::kv_cache_size: return kv_cache_size(note);
        case NoteKind::kv_cache_sharing:
            return fmt::format("with {} KV heads instead of {} the cache is {}× smaller: {:g} instead of {:g} bytes per token", whole(note, "kv_heads"),
                               whole(note, "heads"), whole(note, "heads") / whole(note, "kv_heads"), note.number("bytes_per_token"),
                               note.number("without_sharing"));
        case NoteKind::dropout_train:
            return fmt::format("dropout in train mode: p = {:g}, seed {}: each weight is kept (keep = 1) with probability 1 − p = {:g} and the kept ones "
                               "are divided by 1 − p, so each row's expected sum stays 1; eval mode switches it off",
                               note.number("p"), whole(note, "seed"), 1 - note.number("p"));
        case NoteKind::checkpoint_rounded:
            return fmt::format("the checkpoint stores its weights in {0}; this {1} run rounds each to the nearest {1} number ({0} and {1} keep "
                               "different bits: bf16 has f32's range and 8 significant bits, f16 11 bits and a largest value of 65504)",
                               note.word("checkpoint"), note.word("dtype"));
        case NoteKind::dropout_eval:
            return fmt::format("dropout p = {:g} is not applied: eval mode (train mode applies it). Beware: F.scaled_dot_product_attention applies its "
                               "dropout_p whatever the module's mode, so a module passes dropout_p = p if self.training else 0.0",
                               note.number("p"));
        case NoteKind::permutation: return permutation(note);
        case NoteKind::grad_tiled_unchecked:
            return fmt::format("the tiled gradients are not compared with the untiled ones here: those would hold n · m = {} × {} scores per head "
                               "(tests/test_grad.cpp compares them on smaller problems)",
                               whole(note, "n"), whole(note, "m"));
        case NoteKind::model_cache_size:
            return fmt::format("KV cache of the whole {} model, counted as cost counts its directory: {} layer{}{}, {:g} numbers per token · {:g} bytes = {:g} bytes "
                               "per token; {:g} tokens → {}",
                               note.word("model_type"), whole(note, "layers"), plural(whole(note, "layers")),
                               whole(note, "sliding") ? fmt::format(" ({} sliding: each holds at most its window)", whole(note, "sliding")) : "",
                               note.number("numbers_per_token"), note.number("bytes"), note.number("bytes_per_token"), note.number("tokens"),
                               bytes_text(note.number("bytes_total")));
        case NoteKind::mla_cache_size:
            return fmt::format("MLA cache: c_cache (d_c = {}) and kr_cache (d_r = {}) for all {} heads, (d_c + d_r) · {} layer{} · {:g} bytes = {:g} bytes "
                               "per token, where the same heads caching their decompressed keys (with the RoPE part) and values would hold {:g} bytes "
                               "({:.3g}× more)",
                               whole(note, "d_c"), whole(note, "d_r"), whole(note, "heads"), whole(note, "layers"), plural(whole(note, "layers")),
                               note.number("bytes"), note.number("bytes_per_token"), note.number("without_mla"),
                               note.number("without_mla") / note.number("bytes_per_token"));
        case NoteKind::mla:
            return fmt::format("MLA: each head's keys and values come from the latent c_kv (d_c = {}); its scores are q_h k_hᵀ{} over d_k = {}{}{}; "
                               "q_latent shows the absorbed form (W_UK folded into the query), which max_abs_diff_absorbed compares with the scores",
                               whole(note, "d_c"), whole(note, "d_r") ? " + q_rope,h k_ropeᵀ" : "", whole(note, "d_k"),
                               whole(note, "d_r") ? fmt::format(" = {} + d_r {}", whole(note, "d_content"), whole(note, "d_r")) : "",
                               note.number("auto_scale") != 0 ? fmt::format(", so the scale 1/√{} counts both parts", whole(note, "d_k")) : "");
        case NoteKind::mask_mixup:
            return mask_mixup_text(MaskMixup{static_cast<MaskMixup::Kind>(whole(note, "kind")), note.word("where"), note.word("given"),
                                             static_cast<std::size_t>(whole(note, "query"))});
    }
    // A value outside the enum: a bug, not a kind
    return fmt::format("note of an unknown kind {}", static_cast<int>(note.kind));
}

}  // namespace attn_trace
