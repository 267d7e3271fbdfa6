#pragma once
// The loader that turns a problem file's JSON into a Problem (docs/PROBLEM.md#all-keys-at-a-glance),
// private to src/problem/. Its members are defined by job, one file each (named below).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "array_source.hpp"
#include "attn_trace/matrix.hpp"
#include "attn_trace/problem.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

class ProblemLoader {
public:
    ProblemLoader(const nlohmann::json& root, const std::string& file, bool allow_nonfinite, ArraySource& arrays);
    Problem load();

private:
    bool has(const char* key) const { return root_.contains(key); }
    const nlohmann::json& at(const char* key) const { return root_[key]; }
    static std::string path_of(const std::string& key) { return "$." + key; }
    void need(bool condition, const std::string& path, const std::string& what) const {
        if (!condition) reader_.fail(path, what);
    }

    // problem_loader.cpp: the order of the reading, unknown keys, non-finite inputs.
    void check_known_keys();
    void check_finite_inputs();
    void report_nonfinite(const std::string& where, const std::string& word);

    // The sizes of the inputs as their shapes declare them, in math orientation,
    // before any of their numbers is read or generated.
    struct Extent {
        std::size_t rows = 0, cols = 0;
    };
    struct DeclaredShapes {
        std::size_t batch = 1;
        Extent x, x_source;                                 // one sequence's
        std::optional<Extent> w_q, w_k, w_v, w_o, q, k, v;  // weights (d_in, d_out); Q, K, V heads side by side
        std::optional<std::size_t> b_q, b_k, b_v, b_o;
    };

    // problem_shapes.cpp: heads, the weights' layout, which inputs go together, their declared shapes.
    void read_heads();
    void read_layout();
    void check_input_keys();
    std::pair<std::size_t, Extent> sequence_shape(const char* key) const;
    std::vector<std::size_t> shape_of_rank(const char* key, std::size_t rank) const;
    std::optional<Extent> weight_shape(const char* key) const;
    std::optional<std::size_t> bias_length(const char* key) const;
    Extent direct_shape(const char* key, int& heads, const char* heads_key);
    DeclaredShapes declared_shapes();

    // problem_sizes.cpp: the declared shapes checked against one another, and the sizes derived.
    void derive_sizes(const DeclaredShapes& d);
    void derive_mla_sizes(const DeclaredShapes& d);
    std::string weight_path(const char* key) const;
    std::string tensor_named(const char* key) const;
    std::string bias_path(const char* key) const;
    void check_bias(const std::optional<std::size_t>& length, const char* key, std::size_t width, const char* weight_name);
    void split_widths(std::size_t q_width, std::size_t k_width, std::size_t v_width, const std::string& q_path,
                      const std::string& k_path, const std::string& v_path);

    // problem_inputs.cpp: the inputs' numbers (X, the projections, Q, K, V, d_out) and their labels.
    Matrix weight(const nlohmann::json& value, const std::string& path) const;
    void read_projections();
    void read_in_proj();
    void read_direct_qkv();
    Matrix direct_matrix(const char* key);
    void read_labels();
    std::vector<std::string> labels(const char* key) const;
    void read_d_out();

    // problem_settings.cpp: what shapes the scores and weights: scale, empty rows, lengths,
    // softcap, dropout, ALiBi, masks, RoPE and positions.
    void read_options();
    void read_dropout(const nlohmann::json& value);
    RopeScaling read_rope_scaling(const nlohmann::json& value);
    void read_qk_norm();
    void read_masks();
    void read_position_features();

    // problem_expect.cpp: the `expect` entries check compares against.
    void read_expectations();

    const nlohmann::json& root_;
    JsonReader reader_;
    Problem problem_;
    bool torch_layout_ = false;
};

}  // namespace attn_trace
