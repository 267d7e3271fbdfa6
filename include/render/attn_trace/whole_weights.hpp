#pragma once
// The weights of decode and tiled as whole (n, m) matrices, for the pictures
// (the heatmap and the SVG draw whole matrices: docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
// Neither trace holds them whole: decode has one weights row per step t over the
// cache so far, tiled has per tile its scores S and the running max m and sum ℓ.
#include <optional>

#include "attn_trace/trace.hpp"

namespace attn_trace {

// A trace of one whole `weights` step per batch and head: decode's rows stacked
// by t (the keys not yet in the cache are 0, drawn as masked: decode is causal),
// or tiled's final weights exp(S_ij − m_i) / ℓ_i from each tile's S and the last
// tile's m and ℓ of its query block (a skipped tile's cells are 0, masked).
// nullopt for a trace that holds its weights whole, or no weights at all.
std::optional<Trace> whole_weights(const Trace& trace);

}  // namespace attn_trace
