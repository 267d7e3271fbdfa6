# bash completion for attn-trace (docs/COMMANDS.md#installing): commands, each command's
# options, exercise topics and step names (for --topic and --steps, comma-separated),
# formats, the values of the other closed options (bench's --impl, random's --dist,
# exercise's --part, --mask, ...), and problem files only where a file is asked for.
# The words come from the binary itself (the hidden `attn-trace words`), so they never lag.
_attn_trace() {
  local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=""
  [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
  local command=${COMP_WORDS[1]:-}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$("$bin" words commands 2>/dev/null) --help --version" -- "$cur"))
    return
  fi
  case $prev in
    --format) COMPREPLY=($(compgen -W "$("$bin" words formats 2>/dev/null)" -- "$cur")); return ;;
    --steps|--impl|--topic)  # a comma-separated list: complete its last item
      local done="" last=$cur words
      if [[ $cur == *,* ]]; then done=${cur%,*},; last=${cur##*,}; fi
      case $prev in
        --impl) words="naive fast cuda" ;;
        --topic) words=$("$bin" words topics 2>/dev/null) ;;
        *) words=$("$bin" words steps 2>/dev/null) ;;
      esac
      COMPREPLY=($(compgen -P "$done" -W "$words" -- "$last"))
      compopt -o nospace 2>/dev/null
      return ;;
    --part) COMPREPLY=($(compgen -W "questions answers both" -- "$cur")); return ;;
    --dist) COMPREPLY=($(compgen -W "normal uniform integers" -- "$cur")); return ;;
    --mask) COMPREPLY=($(compgen -W "none causal causal-bottom-right window: chunked: padding:" -- "$cur")); return ;;
    --dtype) COMPREPLY=($(compgen -W "f64 f32" -- "$cur")); return ;;
    --backend) COMPREPLY=($(compgen -W "cpu cuda" -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --math) COMPREPLY=($(compgen -W "dollars github" -- "$cur")); return ;;
    --empty-rows) COMPREPLY=($(compgen -W "error zero nan" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$("$bin" words options "$command" 2>/dev/null)" -- "$cur"))
    return
  fi
  # problem files (and folders on the way to them)
  COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
}
complete -o filenames -F _attn_trace attn-trace
