// Mask specs from JSON (docs/PROBLEM.md#masks,
// docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all), with errors that name
// the JSON path.
#include "mask_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/matrix.hpp"

namespace attn_trace {

using nlohmann::json;

std::string mask_shape_error(std::size_t n, std::size_t m, const std::string& label, std::size_t rows, std::size_t cols) {
    return fmt::format("the scores are ({}, {}) (queries × keys) so the {} mask must be ({}, {}), found {}", n, m, label, n, m, shape_string(rows, cols));
}

namespace {

MaskSpec read_spec(const json& value, const std::string& path, const JsonReader& reader_, std::size_t n, std::size_t m) {
    if (value.is_string()) return parse_mask_string(value.get<std::string>(), reader_.file() + ": " + path);
    if (value.is_array()) {
        // A matrix with no kind: which of the three it could be (docs/PROBLEM.md#masks-written-the-wrong-way-round).
        bool zero_one = !value.empty();
        for (const auto& row : value)
            for (const auto& x : row.is_array() ? row : json::array({row})) zero_one = zero_one && (x == 0 || x == 1 || x.is_boolean());
        reader_.fail(path, fmt::format("a bare matrix is not a mask: say what its numbers mean, {{\"additive\": [[…]]}} (added to the scores: 0 to read, "
                                       "\"-inf\" to hide), {{\"allowed\": [[…]]}} (1 or true where a query may read a key) or {{\"blocked\": [[…]]}} (1 or "
                                       "true where it may not); found {}{}",
                                       describe_json(value), zero_one ? " of 0s and 1s: allowed or blocked, most likely" : ""));
    }
    if (!value.is_object() || value.size() != 1)
        reader_.fail(path, "expected a mask name such as \"causal\" or an object with one key (window, chunked, key_valid, additive, allowed, blocked, sparse), found " +
                               describe_json(value));
    const std::string kind = value.begin().key();  // the object has exactly one key
    const json& body = value.begin().value();
    const std::string at = path + "." + kind;
    MaskSpec spec;
    if (kind == "window") {
        spec.kind = MaskSpec::Kind::window;
        if (body.is_object()) {
            for (const auto& [key, item] : body.items())
                if (key != "left" && key != "right") reader_.fail(at + "." + key, "unknown key: a window has \"left\" and \"right\"");
            spec.window_left = body.contains("left") ? reader_.whole_number(body["left"], at + ".left", 0, 1L << 40) : 0;
            spec.window_right = body.contains("right") ? reader_.whole_number(body["right"], at + ".right", 0, 1L << 40) : 0;
            spec.label = fmt::format("window(left {}, right {})", spec.window_left, spec.window_right);
        } else {
            const long width = reader_.whole_number(body, at, 1, 1L << 40);
            spec.window_left = width - 1;  // W keys, the query's own included
            spec.label = fmt::format("window:{}", width);
        }
    } else if (kind == "chunked") {
        spec.kind = MaskSpec::Kind::chunked;
        spec.chunk = reader_.whole_number(body, at, 1, 1L << 40);
        spec.label = fmt::format("chunked:{}", spec.chunk);
    } else if (kind == "key_valid") {
        spec.kind = MaskSpec::Kind::key_valid;
        if (!body.is_array()) reader_.fail(at, "expected one 1/0 (or true/false) per key, found " + describe_json(body));
        for (std::size_t j = 0; j < body.size(); ++j) spec.key_valid.push_back(reader_.boolean(body[j], fmt::format("{}[{}]", at, j)));
        spec.label = "key_valid";
    } else if (kind == "additive") {
        spec.kind = MaskSpec::Kind::additive;
        const auto shape = reader_.declared_shape(body, at, 2);
        if (shape[0] != n || shape[1] != m) reader_.fail(path, mask_shape_error(n, m, "additive", shape[0], shape[1]));
        spec.matrix = reader_.matrix(body, at);
        for (std::size_t i = 0; i < spec.matrix.rows(); ++i)
            for (std::size_t j = 0; j < spec.matrix.cols(); ++j) {
                const double x = spec.matrix(i, j);
                if (std::isnan(x) || x == std::numeric_limits<double>::infinity())
                    reader_.fail(fmt::format("{}[{}][{}]", at, i, j), fmt::format("expected a finite bias or \"-inf\", found {}", x));
            }
        spec.label = "additive";
    } else if (kind == "allowed" || kind == "blocked") {
        spec.kind = kind == "allowed" ? MaskSpec::Kind::allowed : MaskSpec::Kind::blocked;
        if (!body.is_array() || body.empty() || !body[0].is_array())
            reader_.fail(at, "expected an (n, m) matrix of true/false, found " + describe_json(body));
        spec.matrix = Matrix(body.size(), body[0].size());
        for (std::size_t i = 0; i < body.size(); ++i) {
            const std::string row_path = fmt::format("{}[{}]", at, i);
            if (!body[i].is_array() || body[i].size() != spec.matrix.cols())
                reader_.fail(row_path, fmt::format("ragged mask: expected {} values like the first row, found {}", spec.matrix.cols(), describe_json(body[i])));
            for (std::size_t j = 0; j < body[i].size(); ++j)
                spec.matrix(i, j) = reader_.boolean(body[i][j], fmt::format("{}[{}]", row_path, j)) ? 1.0 : 0.0;
        }
        spec.label = kind;
    } else if (kind == "sparse") {
        return read_sparse_spec(body, at, reader_, n, m);
    } else {
        const auto near = nearest_word(kind, {"window", "chunked", "key_valid", "additive", "allowed", "blocked", "sparse"});
        reader_.fail(at, "unknown mask kind \"" + kind + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)") +
                             ": expected window, chunked, key_valid, additive, allowed, blocked or sparse");
    }
    return spec;
}

}  // namespace

MaskSpec read_mask_spec(const json& value, const std::string& path, const JsonReader& reader, std::size_t n, std::size_t m) {
    MaskSpec spec = read_spec(value, path, reader, n, m);
    spec.path = path;
    spec.given = value.dump();
    return spec;
}

// {"block": b, "window": W | {"left", "right"}, "global": [...], "random": {"per_row", "seed"}, "causal": bool}
MaskSpec read_sparse_spec(const json& body, const std::string& path, const JsonReader& reader, std::size_t n, std::size_t m) {
    static const std::vector<std::string> keys = {"block", "window", "global", "random", "causal"};
    if (!body.is_object())
        reader.fail(path, "expected an object with block, window, global, random and causal (each optional), found " + describe_json(body));
    for (const auto& [key, item] : body.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            const auto near = nearest_word(key, keys);
            reader.fail(path + "." + key, "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)") +
                                              ": a sparse pattern has block, window, global, random and causal");
        }
    MaskSpec spec;
    spec.kind = MaskSpec::Kind::sparse;
    SparsePattern& p = spec.sparse;
    if (body.contains("block")) {
        const long block = reader.whole_number(body["block"], path + ".block", -(1L << 40), 1L << 40);
        if (block <= 0) reader.fail(path + ".block", fmt::format("a block holds at least 1 token, found {}", block));
        p.block = static_cast<std::size_t>(block);
    }
    const std::size_t query_blocks = block_count(n, p.block), key_blocks = block_count(m, p.block);
    // Bottom-right alignment on blocks puts query block I against key block I + (m − n) / b,
    // which is a block only when b divides m − n.
    const std::size_t gap = m > n ? m - n : n - m;
    if (body.contains("window") && gap % p.block != 0)
        reader.fail(path + ".block", fmt::format("with {} queries and {} keys the query blocks line up with the key blocks (bottom-right) only "
                                                 "when the block divides m − n = {}, found block {}",
                                                 n, m, static_cast<long>(m) - static_cast<long>(n), p.block));
    if (body.contains("window")) {
        const json& w = body["window"];
        p.has_window = true;
        auto side = [&](const json& value, const std::string& at) {
            const long x = reader.whole_number(value, at, -(1L << 40), 1L << 40);
            if (x < 0) reader.fail(at, fmt::format("a window reaches 0 or more blocks to each side, found {}", x));
            return x;
        };
        if (w.is_object()) {
            for (const auto& [key, item] : w.items())
                if (key != "left" && key != "right") reader.fail(path + ".window." + key, "unknown key: a window has \"left\" and \"right\"");
            p.window_left = w.contains("left") ? side(w["left"], path + ".window.left") : 0;
            p.window_right = w.contains("right") ? side(w["right"], path + ".window.right") : 0;
        } else {
            // W blocks including the query's own, as {"window": W}
            // (docs/PROBLEM.md#window): causal on blocks.
            const long width = reader.whole_number(w, path + ".window", -(1L << 40), 1L << 40);
            if (width < 1) reader.fail(path + ".window", fmt::format("a window holds at least 1 block (the query's own), found {}", width));
            p.window_left = width - 1;
        }
    }
    if (body.contains("global")) {
        const json& g = body["global"];
        if (!g.is_array()) reader.fail(path + ".global", "expected a list of block indices, found " + describe_json(g));
        const std::size_t blocks = std::max(query_blocks, key_blocks);
        for (std::size_t k = 0; k < g.size(); ++k) {
            const std::string at = fmt::format("{}.global[{}]", path, k);
            const long index = reader.whole_number(g[k], at, -(1L << 40), 1L << 40);
            if (index < 0 || static_cast<std::size_t>(index) >= blocks)
                reader.fail(at, fmt::format("{} tokens in blocks of {} make {} blocks (0 … {}), so a global block index is 0 … {}, found {}",
                                            std::max(n, m), p.block, blocks, blocks - 1, blocks - 1, index));
            p.global.push_back(static_cast<std::size_t>(index));
        }
        std::sort(p.global.begin(), p.global.end());
        p.global.erase(std::unique(p.global.begin(), p.global.end()), p.global.end());
    }
    if (body.contains("causal")) p.causal = reader.boolean(body["causal"], path + ".causal");
    if (body.contains("random")) {
        const json& r = body["random"];
        if (!r.is_object()) reader.fail(path + ".random", "expected {\"per_row\": R, \"seed\": S}, found " + describe_json(r));
        for (const auto& [key, item] : r.items())
            if (key != "per_row" && key != "seed") reader.fail(path + ".random." + key, "unknown key: random has \"per_row\" and \"seed\"");
        if (!r.contains("per_row")) reader.fail(path + ".random", "needs \"per_row\": how many key blocks each query block draws");
        const long per_row = reader.whole_number(r["per_row"], path + ".random.per_row", -(1L << 40), 1L << 40);
        if (per_row < 0) reader.fail(path + ".random.per_row", fmt::format("expected 0 or more key blocks per query block, found {}", per_row));
        p.has_random = true;
        p.per_row = static_cast<std::size_t>(per_row);
        p.seed = r.contains("seed") ? static_cast<std::uint64_t>(reader.whole_number(r["seed"], path + ".random.seed", 0, 1L << 53)) : 0;
        // Drawing looks at every (query block, key block) pair once.
        constexpr double most_pairs = 1 << 28;
        if (static_cast<double>(query_blocks) * static_cast<double>(key_blocks) > most_pairs)
            reader.fail(path + ".random", fmt::format("drawing random blocks on {} × {} blocks would look at more than {} pairs: use a larger block",
                                                      query_blocks, key_blocks, static_cast<long>(most_pairs)));
    }
    resolve_random(p, n, m);
    spec.label = describe_sparse(p);
    spec.path = path;
    return spec;
}

}  // namespace attn_trace
