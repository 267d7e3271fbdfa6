// LaTeX of the words and formulas every renderer writes: a formula's names in italics
// or upright, Unicode's scripts and symbols in math mode, a sentence split into its
// words and its mathematics (text_pieces), so that pdflatex compiles what the traces,
// explanations and worksheets say.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/text_width.hpp"


namespace attn_trace {

namespace {

// The LaTeX of one Unicode symbol the formulas and notes use, in math mode (nullopt when
// unknown). Superscripts and subscripts are script_run's.
std::optional<std::string> math_symbol(const std::string& symbol) {
    static const std::vector<std::pair<std::string, std::string>> symbols = {
        {"ᵀ", "^{\\top}"}, {"·", "\\cdot "}, {"−", "-"}, {"…", "\\dots "}, {"×", "\\times "}, {"Σ", "\\Sigma"}, {"∞", "\\infty "},
        {"≤", "\\le "}, {"≥", "\\ge "}, {"ℓ", "\\ell "}, {"⌊", "\\lfloor "}, {"⌋", "\\rfloor "}, {"→", "\\to "}, {"θ", "\\theta "},
        {"≠", "\\ne "}, {"≈", "\\approx "}, {"⊙", "\\odot "}, {"‖", "\\|"}, {"̃", ""}, {"α", "\\alpha "}, {"δ", "\\delta "},
        {"∂", "\\partial "}, {"∝", "\\propto "}, {"⊗", "\\otimes "}, {"⇔", "\\Leftrightarrow "}, {"←", "\\leftarrow "},
        {"°", "^{\\circ}"}, {"√", "\\surd "}, {"½", "\\tfrac{1}{2}"}};
    for (const auto& [from, to] : symbols)
        if (from == symbol) return to;
    return std::nullopt;
}

// Unicode's superscripts and subscripts, and the characters they raise or lower.
struct Scripts {
    const char* mark;  // ^ or _
    std::vector<std::string> glyphs;
    std::string plain;
};
const Scripts superscripts{"^", {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹", "⁺", "⁻", "⁼", "⁽", "⁾", "ⁿ", "ⁱ"}, "0123456789+-=()ni"};
const Scripts subscripts{"_", {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉", "₊", "₋", "₌", "₍", "₎"}, "0123456789+-=()"};

// A run of superscripts or subscripts at text[i] ("³⁸", "⁻¹") as LaTeX ("^{38}", "^{-1}"),
// and where it ends; nullopt where none starts.
std::optional<std::pair<std::string, std::size_t>> script_run(const std::string& text, std::size_t i) {
    for (const Scripts* scripts : {&superscripts, &subscripts}) {
        std::string raised;
        std::size_t end = i;
        for (bool more = true; more;) {
            more = false;
            for (std::size_t k = 0; k < scripts->glyphs.size(); ++k)
                if (text.compare(end, scripts->glyphs[k].size(), scripts->glyphs[k]) == 0) {
                    raised += scripts->plain[k];
                    end += scripts->glyphs[k].size();
                    more = true;
                    break;
                }
        }
        if (end > i) return std::pair{fmt::format("{}{{{}}}", scripts->mark, raised), end};
    }
    return std::nullopt;
}

}  // namespace

std::string latex_text(const std::string& text) {
    static const std::vector<std::pair<std::string, std::string>> replacements = {
        {"\\", "\\textbackslash{}"}, {"_", "\\_"}, {"&", "\\&"}, {"%", "\\%"}, {"#", "\\#"}, {"$", "\\$"}, {"{", "\\{"},
        {"}", "\\}"}, {"~", "\\textasciitilde{}"}, {"^", "\\textasciicircum{}"}, {"ᵀ", "$^\\top$"}, {"·", "$\\cdot$"},
        {"√", "$\\surd$"}, {"−", "$-$"}, {"…", "\\dots{}"}, {"Σ", "$\\Sigma$"}, {"∞", "$\\infty$"}, {"×", "$\\times$"},
        {"≤", "$\\le$"}, {"≥", "$\\ge$"}, {"⌊", "$\\lfloor$"}, {"⌋", "$\\rfloor$"}, {"→", "$\\to$"},
        {"ℓ", "$\\ell$"},
        {"§", "\\S{}"}, {"‖", "$\\|$"}, {"–", "--"}, {"—", "---"}, {"≠", "$\\ne$"}, {"≈", "$\\approx$"}, {"⊙", "$\\odot$"},
        {"∝", "$\\propto$"}, {"⇔", "$\\Leftrightarrow$"}, {"←", "$\\leftarrow$"}, {"θ", "$\\theta$"}, {"½", "$\\frac12$"},
        {"°", "$^\\circ$"}, {"⊗", "$\\otimes$"}, {"<", "\\textless{}"}, {">", "\\textgreater{}"}, {"|", "\\textbar{}"}};
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        // Typewriter quotes as TeX's curly ones: " and ' open after a space or a bracket
        // (`` and `), else close ('' and '); a plain " would print as a closing quote.
        if (text[i] == '"' || text[i] == '\'') {
            const bool opening = i == 0 || std::string(" ([{").find(text[i - 1]) != std::string::npos;
            out += text[i] == '"' ? (opening ? "``" : "''") : (opening ? "`" : "'");
            ++i;
            continue;
        }
        // "10³⁸" is 10$^{38}$: a run of superscripts is one exponent, not two.
        if (const auto script = script_run(text, i)) {
            out += "$" + script->first + "$";
            i = script->second;
            continue;
        }
        const auto match = std::find_if(replacements.begin(), replacements.end(),
                                        [&](const auto& r) { return text.compare(i, r.first.size(), r.first) == 0; });
        if (match == replacements.end()) {
            const auto byte = static_cast<unsigned char>(text[i]);
            if (byte < 0x80) {
                out += static_cast<char>(byte);
                ++i;
                continue;
            }
            // A symbol of the formulas (α, ∂, δ) as the maths writes it. Any other non-ASCII
            // character (a token label in another script) would stop pdflatex with inputenc's
            // "not set up for use with LaTeX": write it as '?' and skip its UTF-8
            // continuation bytes, so the document always compiles.
            const std::size_t length = utf8_length(byte);
            const auto symbol = math_symbol(text.substr(i, length));
            out += symbol ? "$" + symbol->substr(0, symbol->find_last_not_of(' ') + 1) + "$" : "?";
            i += length;
        } else {
            out += match->second;
            i += match->first.size();
        }
    }
    return out;
}

namespace {

// Whether a formula so far ends with a name or a closing bracket (Q, V_j, Kᵀ, ℓ, (…)),
// not an operator (−, ·, =): a space after it separates two factors.
bool ends_with_name(const std::string& text) {
    if (text.empty()) return false;
    for (const char* name_like : {"ᵀ", "ℓ", "∞", "θ", "²", "…"})
        if (text.size() >= std::strlen(name_like) && text.compare(text.size() - std::strlen(name_like), std::string::npos, name_like) == 0) return true;
    const auto last = static_cast<unsigned char>(text.back());
    return std::isalnum(last) || last == ')' || last == ']';
}

// Math-mode LaTeX of a formula: one-letter names in italics, longer ones upright
// (\mathrm{exp}), x_word → x_{\mathrm{word}}, ^(…) → ^{…}, √x → \sqrt{x}, spaces kept.
std::string math_of(const std::string& text) {
    std::string out;
    // Where the last name began in `out`, and where its last subscript ended: a second
    // subscript right after it (X_source_r,0) subscripts the braced whole, {X_{source}}_{r,0}.
    std::size_t base = std::string::npos, subscripted = std::string::npos;
    auto name = [](const std::string& word) {
        if (word == "inf") return std::string("\\infty ");
        return word.size() == 1 ? word : "\\mathrm{" + latex_text(word) + "}";
    };
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (std::isalpha(static_cast<unsigned char>(c))) {
            std::size_t end = i;
            while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
            // row_max, max_abs_diff_vs_full: a name of several letters takes a part of
            // two or more letters after an underscore along (m_new is m with a
            // subscript, max_j is max with one).
            auto part_end = [&](std::size_t underscore) {
                std::size_t k = underscore + 1;
                while (k < text.size() && std::isalnum(static_cast<unsigned char>(text[k]))) ++k;
                return k;
            };
            if (end - i >= 2)
                while (end < text.size() && text[end] == '_' && part_end(end) - end > 2) end = part_end(end);
            // A step's name is one word, one-letter parts and all (grad_q_rot, grad_W_Q), and
            // so is the step a subscript follows (grad_q_r,0: grad_q's entry r,0).
            std::size_t whole = i;
            while (whole < text.size() && (std::isalnum(static_cast<unsigned char>(text[whole])) || text[whole] == '_')) ++whole;
            for (std::size_t step_end = whole; step_end != std::string::npos && step_end > end; step_end = text.rfind('_', step_end - 1))
                if (find_step(text.substr(i, step_end - i))) {
                    end = step_end;
                    break;
                }
            base = out.size();
            out += name(text.substr(i, end - i));
            i = end;
        } else if ((c == '_' || c == '^') && i + 1 < text.size()) {
            if (c == '_' && subscripted == out.size() && base != std::string::npos) {
                out.insert(base, "{");
                out += "}";
            }
            std::size_t end = i + 1;
            std::string inner;
            if (text[end] == '(') {  // ^(…) up to the matching parenthesis
                int depth = 0;
                for (; end < text.size(); ++end) {
                    depth += text[end] == '(' ? 1 : text[end] == ')' ? -1 : 0;
                    if (depth == 0) break;
                }
                inner = math_of(text.substr(i + 2, end - i - 2));
                ++end;
            } else {
                while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
                const std::string word = text.substr(i + 1, end - i - 1);
                // Index letters stay italic (S_ij); a word is upright (m_old, V_cache).
                inner = word.size() > 2 && !std::isdigit(static_cast<unsigned char>(word[0])) ? "\\mathrm{" + word + "}" : word;
                // An entry's two indices are one subscript (X_r,1, W_UK,h); "m_new, max" is two words.
                while (end + 1 < text.size() && text[end] == ',' && std::isalnum(static_cast<unsigned char>(text[end + 1]))) {
                    const std::size_t index = end + 1;
                    for (end = index; end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]));) ++end;
                    inner += "," + text.substr(index, end - index);
                }
            }
            out += fmt::format("{}{{{}}}", c, inner);
            if (c == '_') subscripted = out.size();
            i = end;
        } else if (text.compare(i, 3, "√") == 0) {  // √d_k → \sqrt{d_k}
            std::size_t end = i + 3;
            while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
            out += "\\sqrt{" + math_of(text.substr(i + 3, end - i - 3)) + "}";
            i = end;
        } else if (const auto script = script_run(text, i)) {  // 10³⁸ → 10^{38}, RoPE⁻¹ → RoPE^{-1}
            out += script->first;
            i = script->second;
        } else if (static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t length = utf8_length(static_cast<unsigned char>(c));
            out += math_symbol(text.substr(i, length)).value_or("?");  // '?': a symbol this table lacks, for a test to find
            i += length;
        } else {
            static const std::string escaped = "{}%#&$";
            // TeX spaces operators itself and breaks a formula only at them: a space
            // is written only between two names that would otherwise run together.
            auto joins = [&](std::size_t k) { return k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '(' || text[k] == '['); };
            if (c == ' ') out += ends_with_name(text.substr(0, i)) && joins(i + 1) ? "\\," : "";
            else if (escaped.find(c) != std::string::npos) out += std::string("\\") + c;
            else if (c == '~') out += "\\sim ";
            else if (c == '\\') out += "\\backslash ";
            else out += c;
            ++i;
        }
    }
    return out;
}

bool is_relation(const std::string& word) {
    static const std::vector<std::string> relations = {"=", "<=", ">=", "≥", "≤", "≈", "≠"};
    return std::find(relations.begin(), relations.end(), word) != relations.end();
}

bool is_operator(const std::string& word) {
    static const std::vector<std::string> operators = {"+", "-", "/", "·", "×", "−", "⊙"};
    return is_relation(word) || std::find(operators.begin(), operators.end(), word) != operators.end();
}

// A word of formula rather than of English: e^(z, ℓ_old, Σ_j, θ_1, 1/√2, rowsum(E), K[0…1], 10³⁸.
bool is_formula_word(const std::string& word) {
    // A name such as row_max, empty_rows (row_max's) or q_a_layernorm is a word of the text,
    // not x with a subscript.
    static const std::regex identifier("([a-z]{2,}(_[a-z0-9]+)+|[a-z](_[a-z0-9]+){2,})('s)?");
    if (std::regex_match(word, identifier)) return false;
    if (word.find_first_of("^_=([") != std::string::npos) return true;
    for (std::size_t i = 0; i < word.size(); ++i)
        if (script_run(word, i)) return true;
    for (const char* symbol : {"·", "Σ", "ℓ", "θ", "∞", "−", "√", "ᵀ", "α", "δ", "∂", "‖", "⊙", "≥", "≤", "≈", "≠", "…"})
        if (word.find(symbol) != std::string::npos) return true;
    return false;
}

// A word of English: a lower-case word of three letters or more ("where", "block's"), a
// capitalised one ("Without"), or one of the short words that no formula here uses as a
// variable ("a key", "of KV head 0").
bool is_prose_word(std::string word) {
    static const std::vector<std::string> short_words = {"a", "an", "of", "it", "by", "as", "in", "is", "at", "on", "to", "or", "no", "if", "be", "so"};
    if (std::find(short_words.begin(), short_words.end(), word) != short_words.end()) return true;
    if (word.size() > 2 && word.compare(word.size() - 2, 2, "'s") == 0) word.resize(word.size() - 2);
    if (word.size() < 3) return false;
    return std::all_of(word.begin() + 1, word.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
           std::isalpha(static_cast<unsigned char>(word.front()));
}

// What a word is: English, mathematics, an operator, or short enough to be either (a number,
// one letter, dZ, ln), which its neighbours decide.
enum class WordKind { prose, math, either };

// One word of a sentence or formula, by its place in the text: [lead, begin) opening
// brackets, [begin, end) the word, [end, tail) its closing brackets and punctuation.
struct Word {
    std::size_t lead, begin, end, tail;
    std::string core;
    bool op;
    WordKind kind;
};

// How far brackets are open in text[from, to): ( and [ open, ) and ] close.
int open_brackets(const std::string& text, std::size_t from, std::size_t to) {
    int depth = 0;
    for (std::size_t i = from; i < to; ++i) depth += text[i] == '(' || text[i] == '[' ? 1 : text[i] == ')' || text[i] == ']' ? -1 : 0;
    return depth;
}

std::vector<Word> words_of(const std::string& text) {
    std::vector<Word> words;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t stop = std::min(text.find(' ', start), text.size());
        std::size_t begin = start, end = stop;
        auto count = [&](char c) { return std::count(text.begin() + static_cast<long>(begin), text.begin() + static_cast<long>(end), c); };
        // "m_new)," and "10³⁸).": the sentence's punctuation (not the ":," of "dO_cat[:,") and the
        // brackets the word does not open; "(kept)" is a word in brackets.
        while (end > begin && ((std::string(",;:.?!").find(text[end - 1]) != std::string::npos && open_brackets(text, begin, end - 1) <= 0) ||
                               (text[end - 1] == ')' && count(')') > count('('))))
            --end;
        while (begin < end && text[begin] == '(' && count('(') > count(')')) ++begin;
        while (end - begin > 2 && text[begin] == '(' && text[end - 1] == ')' && open_brackets(text, begin + 1, end - 1) == 0 &&
               text.find_first_of("()", begin + 1) == end - 1) {
            ++begin;
            --end;
        }
        const std::string core = text.substr(begin, end - begin);
        const bool op = is_operator(core);
        static const std::regex number("[-−]?([0-9][0-9,.]*|inf)");  // 12,288 and -inf are numbers, as the renderers write them
        const WordKind kind = op || is_formula_word(core) ? WordKind::math
                              : is_prose_word(core)       ? WordKind::prose
                              : core.size() <= 2 || std::regex_match(core, number) ? WordKind::either
                                                                                   : WordKind::prose;  // PyTorch, RoPE, f16's
        if (stop > start) words.push_back({start, begin, end, stop, core, op, kind});
        start = stop + 1;
    }
    return words;
}

}  // namespace

std::vector<TextPiece> text_pieces(const std::string& text, bool starts_with_math) {
    std::vector<Word> words = words_of(text);
    // Two words touch when nothing but a space is between them ("A V", not "0, key").
    auto touch = [&](std::size_t k) { return words[k].tail == words[k].end && words[k + 1].lead == words[k + 1].begin; };
    // The words beside an operator are its operands: a number or letter, a step's name
    // ("out = u / ℓ"), and a named quantity beside arithmetic ("rescale" in "rescale · ℓ_old"),
    // but not another word beside a relation ("the draw ≥ p") or a short word of English
    // ("-inf = a key").
    for (std::size_t k = 0; k < words.size(); ++k) {
        if (!words[k].op) continue;
        for (std::size_t other : {k - 1, k + 1}) {
            if (other >= words.size() || !touch(std::min(k, other))) continue;
            Word& operand = words[other];
            if (operand.kind == WordKind::either || (operand.kind == WordKind::prose && operand.core.size() > 2 && (!is_relation(words[k].core) || find_step(operand.core))))
                operand.kind = WordKind::math;
        }
    }
    // What a formula's bracket holds is mathematics ("max(m_old, max_j S_ij)").
    int depth = 0;
    for (Word& word : words) {
        if (depth > 0) word.kind = WordKind::math;
        if (word.kind == WordKind::math) depth = std::max(0, depth + open_brackets(text, word.begin, word.tail));
    }
    // A formula begins with mathematics ("0 where a query may read a key"); a short word
    // touching a formula belongs to it ("A V_cache", "dS K").
    if (starts_with_math && !words.empty() && words.front().kind == WordKind::either) words.front().kind = WordKind::math;
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t k = 0; k + 1 < words.size(); ++k) {
            if (!touch(k)) continue;
            for (auto [from, to] : {std::pair{k, k + 1}, std::pair{k + 1, k}})
                if (words[from].kind == WordKind::math && words[to].kind == WordKind::either) {
                    words[to].kind = WordKind::math;
                    changed = true;
                }
        }
    }
    // The formulas: runs of mathematics, each broken after a comma, semicolon or colon
    // outside its brackets ("s · S, s = 1/√2" is two), not ending with an operator ("−∞ = a
    // key": the = is the sentence's; "the draw ≥ p" keeps its ≥), with the brackets it opens or closes.
    std::vector<TextPiece> pieces;
    std::size_t written = 0;
    auto add = [&](bool math, std::size_t from, std::size_t to) {
        if (to <= from) return;
        const std::string piece = text.substr(from, to - from);
        pieces.push_back({math, math ? math_of(piece) : piece});
    };
    for (std::size_t k = 0; k < words.size();) {
        if (words[k].kind != WordKind::math) {
            ++k;
            continue;
        }
        std::size_t last = k;
        auto ends_clause = [&](const Word& w) {
            return text.substr(w.end, w.tail - w.end).find_first_of(",;:.?!") != std::string::npos && open_brackets(text, words[k].begin, w.tail) <= 0;
        };
        // "W_Q (d_k = 4)": a bracket that no operator leads to opens a remark of its own.
        auto opens_remark = [&](const Word& w) { return w.lead < w.begin && !words[last].op && open_brackets(text, words[k].begin, words[last].tail) <= 0; };
        while (last + 1 < words.size() && words[last + 1].kind == WordKind::math && !ends_clause(words[last]) && !opens_remark(words[last + 1])) ++last;
        const std::size_t next = last + 1;
        const std::size_t first = k;
        while (last > first && words[last].op) --last;
        k = next;
        if (words[last].op) continue;  // an operator alone: the sentence's
        std::size_t begin = words[first].begin, end = words[last].end;
        for (int open = open_brackets(text, begin, end); open > 0 && end < words[last].tail && (text[end] == ')' || text[end] == ']'); --open) ++end;
        for (int open = open_brackets(text, begin, end); open < 0 && begin > words[first].lead; ++open) --begin;
        add(false, written, begin);
        add(true, begin, end);
        written = end;
    }
    add(false, written, text.size());
    return pieces;
}

namespace {

// In maths a comma is punctuation, followed by a space: a number's thousands separator
// (1,024: a digit, a comma, three digits and no fourth) is written {,} to typeset 1,024.
// TeX breaks inline maths only after a relation or an operator; a long list in a note
// (a sparse mask's parts, "block 2; window …; causal") may also break after a semicolon.
std::string grouped_in_math(const std::string& math) {
    auto digit = [&math](std::size_t k) { return k < math.size() && std::isdigit(static_cast<unsigned char>(math[k])); };
    std::string out;
    for (std::size_t k = 0; k < math.size(); ++k) {
        const bool separator = math[k] == ',' && k > 0 && digit(k - 1) && digit(k + 1) && digit(k + 2) && digit(k + 3) && !digit(k + 4);
        out += separator ? "{,}" : math[k] == ';' ? ";\\allowbreak " : std::string(1, math[k]);
    }
    return out;
}

// Pieces as LaTeX: the mathematics in math mode, the words as text.
std::string latex_pieces(const std::vector<TextPiece>& pieces) {
    std::string out;
    for (const auto& piece : pieces) out += piece.math ? "$" + grouped_in_math(piece.text) + "$" : latex_text(piece.text);
    return out;
}

}  // namespace

std::string latex_formula(const std::string& formula) { return latex_pieces(text_pieces(formula, true)); }

std::string latex_prose(const std::string& text) { return latex_pieces(text_pieces(text, false)); }

std::string latex_ragged_prose(const std::string& paragraphs) { return "{\\raggedright\n" + paragraphs + "\\par}\n"; }

std::string latex_document(const std::string& fragment) {
    return "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n" + fragment + "\\end{document}\n";
}

}  // namespace attn_trace
