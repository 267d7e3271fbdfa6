# The documents' console examples are the binary's real output. An example block is a
# fenced block in README.md or docs/*.md whose first line is a `$ ` command and which runs
# attn-trace (`$ attn-trace ...`, or a `$ ` line piping or chaining into it); each `$ `
# command in it runs in order, and its output is the lines after it, up to the next `$ `
# line or the end of the block. Each output line shown (trailing spaces stripped) must
# appear, in order, in what the command really prints (stdout and stderr together): a
# document may leave lines out, and a line that is only `...` or `…` marks such a cut,
# but every line it does show is real. A failure names the file and line, the command
# and the first shown line that the output lacks.
#
# The commands run with `attn-trace` on PATH as $ATTN_TRACE, in a scratch directory
# whose entries are links to the repository's top level: the documents' relative paths
# (examples/..., tests/...) resolve as from the repository root, while the files an
# example writes (-o r600.json, > golden.json, --svg) land in the scratch directory and
# a later command of the same block reads them. Skipped, by rule, because their output
# describes the machine and not the documents: `bench` (timings), `--backend cuda` (a
# GPU), `--version` (this CPU's kernel). The fast path's note names its thread count
# (one per core) and the scores those threads hold at once: those two figures are the
# machine's, and are compared as placeholders ("N threads", "X of scores at once").
source "$SOURCE_DIR/tests/cli/lib.sh"

mkdir -p bin scratch
ln -sf "$ATTN_TRACE" bin/attn-trace
for entry in "$SOURCE_DIR"/*; do
  [ "$(basename "$entry")" = build ] || ln -sfn "$entry" "scratch/$(basename "$entry")"
done

PATH="$PWD/bin:$PATH" python3 - "$SOURCE_DIR" "$PWD/scratch" > report.txt <<'EOF'
import glob, os, re, subprocess, sys

source, scratch = sys.argv[1], sys.argv[2]
documents = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
runs_attn_trace = re.compile(r"^\$ (.*(\||&&|;)\s*)?attn-trace\b")
skipped_by_rule = re.compile(r"^\$ attn-trace (bench\b|--version\b)|--backend[ =]cuda\b")
fence = re.compile(r"^\s*(```+|~~~+)")
machine = [(re.compile(r"\b[0-9]+ threads\b"), "N threads"),
           (re.compile(r"\b[0-9.]+ (bytes|KiB|MiB|GiB) of scores at once\b"), "X of scores at once")]

def portable(line):
    for figure, placeholder in machine:
        line = figure.sub(placeholder, line)
    return line

def examples(path):
    """(line number, command, shown output lines) for each example of one document."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        opening = fence.match(lines[i])
        i += 1
        if not opening:
            continue
        block, start = [], i
        while i < len(lines) and not lines[i].lstrip().startswith(opening.group(1)):
            block.append(lines[i].rstrip())
            i += 1
        i += 1
        if not block or not block[0].startswith("$ ") or not any(runs_attn_trace.match(line) for line in block):
            continue
        j = 0
        while j < len(block):
            number, command = start + j + 1, block[j]
            while command.endswith("\\") and j + 1 < len(block):
                j += 1
                command = command[:-1] + block[j]
            j += 1
            output = []
            while j < len(block) and not block[j].startswith("$ "):
                output.append(block[j])
                j += 1
            while output and output[-1] == "":
                output.pop()
            yield number, command[2:], output

commands = examples_run = skipped = failed = 0
for path in documents:
    name = os.path.relpath(path, source)
    for number, command, shown in examples(path):
        if skipped_by_rule.search("$ " + command):
            skipped += 1
            print(f"skip: {name}:{number}: $ {command}")
            continue
        # a command that does not run attn-trace (echo '{...}' > file) prepares the next
        commands += 1
        examples_run += 1 if runs_attn_trace.match("$ " + command) else 0
        try:
            run = subprocess.run(["bash", "-c", command], cwd=scratch, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=120)
            real = [line.rstrip() for line in run.stdout.decode("utf-8", "replace").split("\n")]
            status = run.returncode
        except subprocess.TimeoutExpired:
            real, status = [], "after 120 s (timed out)"
        problem = None
        if status in (4, 126, 127) or not isinstance(status, int):
            problem = f"it exited {status}"
        else:
            comparable = [portable(line) for line in real]
            at = 0
            for line in shown:
                if line.strip() in ("...", "…"):
                    continue
                while at < len(comparable) and comparable[at] != portable(line):
                    at += 1
                if at == len(comparable):
                    problem = f"the first shown line its output lacks (in order):\n    > {line}"
                    break
                at += 1
        if problem:
            failed += 1
            print(f"FAIL: {name}:{number}: $ {command}\n    {problem}\n    its output:")
            for line in real[:40] + (["    ..."] if len(real) > 40 else []):
                print(f"    | {line}")
print(f"COUNTS {commands} {examples_run} {failed} {skipped}")
EOF
status=$?
grep -v '^COUNTS ' report.txt
read -r _ commands examples failed skipped < <(grep '^COUNTS ' report.txt) || { fail "the example checker did not finish (python3 exited $status)"; finish; exit; }
echo "$examples attn-trace examples checked ($commands commands run), $failed failed, $skipped skipped by rule"
checks=$((checks + commands))
failures=$((failures + failed))
# Finding (almost) nothing to check is a broken extraction, not a pass.
checks=$((checks + 1))
[ "$examples" -ge 30 ] || fail "only $examples attn-trace examples found in README.md and docs/*.md (expected at least 30)"
# A picture in the docs that the tool draws exactly (no timing in it) is what it draws now:
# docs/images/precision_no_max_shift.svg had gone stale (its tooltips lacked the head).
"$ATTN_TRACE" precision "$SOURCE_DIR/examples/half_overflow.json" --no-max-shift --svg precision_no_max_shift.svg > /dev/null
expect_exit 0 "" -- cmp precision_no_max_shift.svg "$SOURCE_DIR/docs/images/precision_no_max_shift.svg"
finish
