#pragma once
// How much room a piece of UTF-8 text takes in a terminal, and which characters a
// label shows as escapes (docs/PROBLEM.md#labels-title-tokens-source_tokens), in one place
// (docs/ARCHITECTURE.md#one-place-each). The widths are the C library's (wcwidth),
// read under a UTF-8 locale of their own, so the program's locale stays "C".
#include <cstddef>
#include <string>

namespace attn_trace {

// Terminal columns: a CJK character takes two, a combining mark none, anything else
// (an ASCII letter, "…", a character the C library does not know) one.
std::size_t display_width(const std::string& text);

// `text` when it fits in `width` columns; otherwise its longest start (whole
// characters, a base letter with its combining marks) that fits in width − 1,
// followed by "…". Empty when width is 0.
std::string fit_width(const std::string& text, std::size_t width);

// `text` with each character that would break a printed table's rows or columns written
// as its escape: a control character (U+0000–U+001F, U+007F–U+009F) or a line or
// paragraph separator (U+2028, U+2029) becomes \n, \t, \r or \u001b, \u2028 (a
// tokenizer's newline token is then the two characters \n, in every output).
std::string visible_text(const std::string& text);

// The bytes of the UTF-8 sequence that `lead` starts (1 for ASCII, and for a byte
// that starts none), for code that walks UTF-8 text a character at a time.
constexpr std::size_t utf8_length(unsigned char lead) { return lead < 0xC0 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2; }

}  // namespace attn_trace
