#!/usr/bin/env bash
# Writes the man page attn-trace.1 from the binary's own texts (its --help, every
# command's --help, --version), so that it covers every command and never lags behind
# the binary. Run by the build (target man_page). Usage: bash tools/make_man.sh BINARY OUT
set -euo pipefail
bin=$1 out=$2
# roff: a backslash is \e; a line starting with . or ' would be a request: \& first.
# The help's usage lines name the binary by the path it was run as: the page says attn-trace.
roff() { sed -e "s|$bin|attn-trace|g" -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
{
  version=$("$bin" --version | head -1)
  echo ".TH ATTN-TRACE 1 \"\" \"$version\" \"User Commands\""
  echo ".SH NAME"
  echo "attn-trace \\- see transformer attention computed, step by step, every matrix and shape exact"
  echo ".SH SYNOPSIS"
  echo ".B attn-trace"
  echo ".I COMMAND"
  echo "[\\fIOPTIONS\\fR] [\\fIPROBLEM\\fR]"
  echo ".SH DESCRIPTION"
  echo "attn-trace reads an attention problem from JSON (Q, K, V, or token vectors X with projection weights, or one"
  echo "layer of a real model's checkpoint) and prints every step of scaled dot-product attention, its backward pass,"
  echo "decoding with a KV cache and the tiled online-softmax pass, with shapes and token labels."
  # @ATTN_TRACE_DOCDIR@: cmake --install writes the folder under the prefix it installs to.
  echo ".PP"
  echo "The documents that describe every problem key, command, step and output format are installed in"
  echo ".IR @ATTN_TRACE_DOCDIR@ :"
  echo "README.md (the index, the mathematics and the conventions), PROBLEM.md (the problem file), COMMANDS.md"
  echo "(every command and output format), FAMILY.md (sparse patterns, MLA, dropout, permutation), PERFORMANCE.md,"
  echo "RELIABILITY.md (what never happens, and fuzzing) and ARCHITECTURE.md (how the code is laid out)."
  echo ".PP"
  echo ".nf"
  "$bin" --help | roff
  echo ".fi"
  echo ".SH COMMANDS"
  for command in $("$bin" words commands); do
    echo ".SS $command"
    echo ".nf"
    "$bin" "$command" --help | roff
    echo ".fi"
  done
  echo ".SH EXIT STATUS"
  echo "0 success, 1 a check failed, 2 bad input or usage, 3 a backend is unavailable, 4 an internal error."
  echo ".SH VERSION"
  echo ".nf"
  "$bin" --version | roff
  echo ".fi"
} > "$out.utf8"
# The help texts are UTF-8 (Σ, ⊙, ᵀ): preconv writes them as roff's \[uXXXX] escapes, which
# every troff reads; without preconv the page stays UTF-8, which man (with preconv) reads.
if command -v preconv >/dev/null; then preconv -e UTF-8 < "$out.utf8" | grep -v "^\.lf " > "$out" && rm "$out.utf8"; else mv "$out.utf8" "$out"; fi
