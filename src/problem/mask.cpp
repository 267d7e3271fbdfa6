#include "attn_trace/mask.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/split_list.hpp"
#include "attn_trace/nearest_word.hpp"

namespace attn_trace {

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
constexpr long max_window = 1L << 40;  // far past any n that fits in memory

// The first position of the chunk of C positions that holds `position` (floor
// division: a query before the first key, at a negative position, is in no key's chunk).
long chunk_start(long position, long chunk) { return (position >= 0 ? position : position - chunk + 1) / chunk * chunk; }

long parse_whole_number(const std::string& text, const std::string& where, const std::string& spec) {
    std::size_t used = 0;
    long value = 0;
    try {
        value = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || text.empty())
        throw InputError(fmt::format("{}: mask '{}': expected a whole number after ':', found '{}'", where, spec, text));
    return value;
}

// Whether query i (of n) may read key j (of m) under one spec.
bool visible(const MaskSpec& spec, std::size_t i, std::size_t j, std::size_t n, std::size_t m) {
    const long key = static_cast<long>(j);
    switch (spec.kind) {
        case MaskSpec::Kind::none: return true;
        case MaskSpec::Kind::causal_upper_left:
        case MaskSpec::Kind::causal_bottom_right:
        case MaskSpec::Kind::window:
        case MaskSpec::Kind::chunked: {
            const KeyRange range = key_range(spec, i, n, m);
            return range.first <= key && key < range.end;
        }
        case MaskSpec::Kind::key_valid: return spec.key_valid[j];
        case MaskSpec::Kind::allowed: return spec.matrix(i, j) != 0.0;
        case MaskSpec::Kind::blocked: return spec.matrix(i, j) == 0.0;
        case MaskSpec::Kind::sparse: return sparse_visible(spec.sparse, i, j, n, m);
        case MaskSpec::Kind::additive: return true;  // handled as a value, not a yes/no
    }
    return true;
}

}  // namespace

KeyRange key_range(const MaskSpec& spec, std::size_t i, std::size_t n, std::size_t m) {
    const long row = static_cast<long>(i) + static_cast<long>(m) - static_cast<long>(n);  // bottom-right: query i's key position
    switch (spec.kind) {
        case MaskSpec::Kind::causal_upper_left: return {0, static_cast<long>(i) + 1};  // j ≤ i
        case MaskSpec::Kind::causal_bottom_right: return {0, row + 1};                 // j ≤ i + (m − n)
        case MaskSpec::Kind::window: return {row - spec.window_left, row + spec.window_right + 1};
        case MaskSpec::Kind::chunked: return {chunk_start(row, spec.chunk), row + 1};  // causal inside the chunk
        case MaskSpec::Kind::none:
        case MaskSpec::Kind::key_valid:
        case MaskSpec::Kind::additive:
        case MaskSpec::Kind::allowed:
        case MaskSpec::Kind::blocked:
        case MaskSpec::Kind::sparse: break;  // not a range: every key, narrowed elsewhere
    }
    return {0, static_cast<long>(m)};
}

std::string key_range_rule(const MaskSpec& spec, std::size_t i, std::size_t n, std::size_t m) {
    const long offset = static_cast<long>(m) - static_cast<long>(n), row = static_cast<long>(i) + offset;
    const KeyRange range = key_range(spec, i, n, m);
    switch (spec.kind) {
        case MaskSpec::Kind::causal_upper_left:
            return fmt::format("{} (top-left aligned): query {} reads keys j <= {}", spec.label, i, range.end - 1);
        case MaskSpec::Kind::causal_bottom_right:
            return fmt::format("{} (bottom-right aligned, m - n = {}): query {} reads keys j <= {} + {} = {}", spec.label, offset, i, i, offset,
                               range.end - 1);
        case MaskSpec::Kind::window:
            return fmt::format("{}: query {} (position {}) reads keys {} to {}", spec.label, i, row, range.first, range.end - 1);
        case MaskSpec::Kind::chunked:
            return fmt::format("{}: query {} (position {}) is in chunk {} (positions {} to {}) and reads keys {} to {}", spec.label, i, row,
                               range.first / spec.chunk, range.first, range.first + spec.chunk - 1, range.first, range.end - 1);
        case MaskSpec::Kind::none:
        case MaskSpec::Kind::key_valid:
        case MaskSpec::Kind::additive:
        case MaskSpec::Kind::allowed:
        case MaskSpec::Kind::blocked:
        case MaskSpec::Kind::sparse: break;
    }
    return "";
}

std::string position_dependence(const MaskSpec& spec) {
    switch (spec.kind) {
        case MaskSpec::Kind::none: return "";
        case MaskSpec::Kind::causal_upper_left:
        case MaskSpec::Kind::causal_bottom_right: return "a causal mask";
        case MaskSpec::Kind::window: return "a window mask";
        case MaskSpec::Kind::chunked: return "a chunked mask";
        case MaskSpec::Kind::sparse: return "a sparse pattern";
        case MaskSpec::Kind::key_valid: return "a padding mask (key_valid)";
        case MaskSpec::Kind::additive:
        case MaskSpec::Kind::allowed:
        case MaskSpec::Kind::blocked: return fmt::format("a per-position mask ({})", spec.label);
    }
    return spec.label;
}

std::string mask_string_forms() { return "none, causal, causal-bottom-right, window:W, chunked:C, padding:1,1,0"; }

MaskSpec parse_mask_string(const std::string& text, const std::string& where) {
    MaskSpec spec;
    spec.label = text;
    spec.given = nlohmann::json(text).dump();
    if (text == "none") return spec;
    if (text == "causal" || text == "causal-upper-left") {
        spec.kind = MaskSpec::Kind::causal_upper_left;
        return spec;
    }
    if (text == "causal-bottom-right" || text == "causal-lower-right") {
        spec.kind = MaskSpec::Kind::causal_bottom_right;
        return spec;
    }
    const auto colon = text.find(':');
    const std::string head = text.substr(0, colon);
    const std::string tail = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (head == "window" && colon != std::string::npos) {
        const long width = parse_whole_number(tail, where, text);
        if (width < 1)
            throw InputError(fmt::format("{}: mask '{}': a window holds at least 1 key (the query's own), found {}", where, text, width));
        // The same bound as {"window": W}: row − (W − 1) must not overflow a long.
        if (width > max_window)
            throw InputError(fmt::format("{}: mask '{}': a window holds at most {} keys, found {}", where, text, max_window, width));
        spec.kind = MaskSpec::Kind::window;
        spec.window_left = width - 1;  // W keys including the query's own
        spec.window_right = 0;
        return spec;
    }
    if (head == "chunked" && colon != std::string::npos) {
        const long chunk = parse_whole_number(tail, where, text);
        if (chunk < 1) throw InputError(fmt::format("{}: mask '{}': a chunk holds at least 1 position, found {}", where, text, chunk));
        if (chunk > max_window)
            throw InputError(fmt::format("{}: mask '{}': a chunk holds at most {} positions, found {}", where, text, max_window, chunk));
        spec.kind = MaskSpec::Kind::chunked;
        spec.chunk = chunk;
        return spec;
    }
    if (head == "padding" && colon != std::string::npos) {
        spec.kind = MaskSpec::Kind::key_valid;
        for (const std::string& item : split_list(tail, ',')) {
            if (item != "0" && item != "1")
                throw InputError(fmt::format("{}: mask '{}': padding takes 1 (valid key) or 0 (padding) per key, found '{}'", where, text, item));
            spec.key_valid.push_back(item == "1");
        }
        return spec;
    }
    if (colon == std::string::npos && (head == "window" || head == "chunked" || head == "padding"))
        throw InputError(fmt::format("{}: mask '{}' needs its {}: {}", where, text, head == "padding" ? "keys" : "width",
                                     head == "window"    ? "window:W, W keys ending at the query's own, e.g. window:2"
                                     : head == "chunked" ? "chunked:C, causal inside chunks of C positions, e.g. chunked:4"
                                                         : "padding:1,1,0, 1 for each valid key and 0 for each padding key"));
    const std::string near = did_you_mean(head, {"none", "causal", "causal-upper-left", "causal-bottom-right", "causal-lower-right", "window", "chunked", "padding"});
    throw InputError(fmt::format(
        "{}: unknown mask '{}'{}: expected none, causal, causal-upper-left, causal-bottom-right, "
        "causal-lower-right, window:W, chunked:C or padding:1,1,0 (objects: window, chunked, key_valid, additive, allowed, blocked, sparse)",
        where, text, near));
}

Matrix build_mask(const std::vector<MaskSpec>& masks, std::size_t n, std::size_t m,
                  std::size_t key_length, double alibi_slope) {
    return build_mask_rows(masks, n, m, key_length, alibi_slope, 0, n);
}

Matrix build_mask_rows(const std::vector<MaskSpec>& masks, std::size_t n, std::size_t m, std::size_t key_length,
                       double alibi_slope, std::size_t first_row, std::size_t row_count) {
    Matrix mask(row_count, m, 0.0);
    const long offset = static_cast<long>(m) - static_cast<long>(n);
    for (std::size_t r = 0; r < row_count; ++r) {
        const std::size_t i = first_row + r;  // the true query index: causal, window and ALiBi depend on it
        for (std::size_t j = 0; j < m; ++j) {
            double value = 0.0;
            // ALiBi: a linear penalty on the distance between query and key positions.
            if (alibi_slope != 0.0)
                value -= alibi_slope * std::fabs(static_cast<double>(static_cast<long>(i) + offset - static_cast<long>(j)));
            bool hidden = j >= key_length;
            for (const auto& spec : masks) {
                if (spec.kind == MaskSpec::Kind::additive) value += spec.matrix(i, j);
                else if (!visible(spec, i, j, n, m)) hidden = true;
            }
            mask(r, j) = hidden ? minus_infinity : value;
        }
    }
    return mask;
}

std::string describe_masks(const std::vector<MaskSpec>& masks) {
    std::string text;
    for (const auto& spec : masks) {
        if (!text.empty()) text += " + ";
        text += spec.label;
    }
    return text.empty() ? "none" : text;
}

std::optional<MaskMixup> mask_mixup(const MaskSpec& spec, std::size_t n, std::size_t m) {
    const Matrix& x = spec.matrix;
    const std::string where = spec.path.empty() ? spec.label : spec.path;
    if (spec.kind == MaskSpec::Kind::additive) {
        bool ones = false;
        for (double v : x.data()) {
            if (v != 0.0 && v != 1.0) return std::nullopt;
            ones = ones || v == 1.0;
        }
        if (!ones) return std::nullopt;
        return MaskMixup{MaskMixup::Kind::additive_zero_one, where, "additive", 0};
    }
    if (spec.kind != MaskSpec::Kind::allowed && spec.kind != MaskSpec::Kind::blocked) return std::nullopt;
    if (x.rows() != n || x.cols() != m) return std::nullopt;
    const bool allowed = spec.kind == MaskSpec::Kind::allowed;
    std::optional<std::size_t> empty_given;
    bool empty_flipped = false, flipped_causal = true;
    for (std::size_t i = 0; i < n; ++i) {
        bool any = false, any_flipped = false;
        for (std::size_t j = 0; j < m; ++j) {
            const bool visible = (x(i, j) != 0.0) == allowed;
            any = any || visible;
            any_flipped = any_flipped || !visible;
            // Causal as run aligns it: query i reads keys j ≤ i + (m − n).
            const bool causal = static_cast<long>(j) <= static_cast<long>(i) + static_cast<long>(m) - static_cast<long>(n);
            flipped_causal = flipped_causal && (!visible == causal);
        }
        if (!any && !empty_given) empty_given = i;
        empty_flipped = empty_flipped || !any_flipped;
    }
    if (!empty_given || empty_flipped) return std::nullopt;
    return MaskMixup{flipped_causal ? MaskMixup::Kind::opposite_causal : MaskMixup::Kind::polarity, where, spec.label, *empty_given};
}

std::string mask_mixup_text(const MaskMixup& mixup) {
    const std::string other = mixup.given == "allowed" ? "blocked" : "allowed";
    const std::string meaning = mixup.given == "allowed" ? "in an allowed mask 1 (true) means may read" : "in a blocked mask 1 (true) means may not read";
    // Front-neutral (a note is the same text in the CLI and in Python): the pitfall by its name.
    const std::string pitfall = "the bool-polarity pitfall shows what a mask read the wrong way round does";
    switch (mixup.kind) {
        case MaskMixup::Kind::additive_zero_one:
            return fmt::format("the additive mask at {} holds only 0s and 1s: added to the scores, a 1 raises a score by 1 and hides no key. "
                               "To hide keys, write \"-inf\" where a query may not read; or give the 0/1 matrix as {{\"allowed\": …}} (1 = may read) "
                               "or {{\"blocked\": …}} (1 = may not read); {}",
                               mixup.where, pitfall);
        case MaskMixup::Kind::polarity:
        case MaskMixup::Kind::opposite_causal:
            return fmt::format("the {} mask at {} leaves query {} no key, {} read the other way round, as {{\"{}\": …}}, {}: {}. Is it the other "
                               "polarity? T{}",
                               mixup.given, mixup.where, mixup.query, mixup.kind == MaskMixup::Kind::polarity ? "while" : "and", other,
                               mixup.kind == MaskMixup::Kind::polarity ? "it leaves every query a key" : "it is exactly the causal mask", meaning,
                               pitfall.substr(1));
    }
    return "";
}

}  // namespace attn_trace
