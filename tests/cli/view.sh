# `view` (docs/COMMANDS.md#view): the layers of one sequence side by side. Each head's top
# key and weight equal the argmax of the weights transformers computed (the goldens' head 0
# `expect`); layers keep the model's index; files of another sequence are refused, both named.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
M=$SOURCE_DIR/tests/models

"$T" view "$M/gpt2_directory/problem_layer0.json" "$M/gpt2_directory/problem.json" --format json > view.json
expect_exit 0 "" -- python3 - "$M/gpt2_directory" <<'PY'
import json, sys
view = json.load(open("view.json"))
folder = sys.argv[1]
assert [l["layer"] for l in view["layers"]] == [0, 1], [l["layer"] for l in view["layers"]]
for layer, name in ((0, "problem_layer0.json"), (1, "problem.json")):
    golden = next(e for e in json.load(open(f"{folder}/{name}"))["expect"] if e["name"] == "weights")["data"]
    head = view["layers"][layer]["heads"][0]
    for i, row in enumerate(golden):
        top = max(range(len(row)), key=lambda j: row[j])
        assert head["top_key"][i] == top, (layer, i, head["top_key"][i], top)
        assert abs(head["top_weight"][i] - row[top]) < 1e-5, (layer, i)
    assert len(view["layers"][layer]["heads"]) == 4
    for h in view["layers"][layer]["heads"]:
        for row in h["weights"]:
            assert abs(sum(row) - 1) < 1e-12
PY
# The text: one table a layer, each cell the top key and its weight (layer 1, query "sat", head 2).
expect_exit 0 "^layer 1  \(.*gpt2_directory/problem\.json\)$" -- "$T" view "$M/gpt2_directory/problem_layer0.json" "$M/gpt2_directory/problem.json"
expect_exit 0 "^sat +sat 0\.5258 +sat 0\.7047 +sat 0\.7052 +warm 0\.5214$" -- "$T" view "$M/gpt2_directory/problem.json"
expect_exit 0 "^sat +sat 0\.53 +sat 0\.70 " -- "$T" view "$M/gpt2_directory/problem.json" --precision 2
# Problems outside a model directory are numbered by their place.
expect_exit 0 '"layer":1,"file":"[^"]*damaged_on_arrival\.json"' -- "$T" view "$SOURCE_DIR/examples/damaged_on_arrival.json" "$SOURCE_DIR/examples/damaged_on_arrival.json" --mask causal --format json
# Another sequence, other tokens, several sequences: refused, named.
expect_exit 2 "bert_directory/problem\.json: its 6 queries over 6 keys differ from .*gpt2_directory/problem\.json's 7 over 7" -- "$T" view "$M/gpt2_directory/problem.json" "$M/bert_directory/problem.json"
python3 -c "import json; p = json.load(open('$SOURCE_DIR/examples/damaged_on_arrival.json')); p['tokens'] = ['a', 'b', 'c']; json.dump(p, open('renamed.json', 'w'))"
expect_exit 2 "renamed\.json: its 3 queries over 3 keys \(their tokens\) differ from" -- "$T" view "$SOURCE_DIR/examples/damaged_on_arrival.json" renamed.json
python3 -c "import json; p = json.load(open('$SOURCE_DIR/examples/damaged_on_arrival.json')); p['X'] = [p['X'], p['X']]; p.pop('tokens', None); json.dump(p, open('batch.json', 'w'))"
expect_exit 2 "batch\.json: holds 2 sequences; view shows the layers of one sequence" -- "$T" view batch.json
expect_exit 2 "PROBLEM is required" -- "$T" view

# The page (docs/COMMANDS.md#the-model-view-page): a cell a head, each head's steps carried
# exactly: the weights decoded from the page equal the JSON view's, bit for bit.
"$T" view "$M/gpt2_directory/problem_layer0.json" "$M/gpt2_directory/problem.json" --format html > view.html
expect_exit 0 "" -- python3 - <<'PY'
import json, re, struct
page = open("view.html", encoding="utf-8").read()
view = json.load(open("view.json"))
cells = re.findall(r'<canvas data-layer="(\d+)" data-head="(\d+)"', page)
assert cells == [(str(l), str(h)) for l in (0, 1) for h in range(4)], cells
data = json.loads(re.search(r'<script type="application/json" id="model-data">(.*?)</script>', page, re.S).group(1))
assert data["explain"] == "attn-trace explain {file} --cell {cell} --head {head}", data["explain"]
for l, layer in enumerate(data["layers"]):
    for h, head in enumerate(layer["heads"]):
        names = [s["name"] for s in head["steps"]]
        assert names == ["scores", "scaled", "mask", "masked", "row_max", "exp", "row_sum", "weights", "out"], names
        step = head["steps"][names.index("weights")]
        size = {"f4": 4, "f8": 8}[step["type"]]
        raw = bytes.fromhex(step["hex"])
        values = struct.unpack(f"<{len(raw) // size}{'f' if size == 4 else 'd'}", raw)
        expected = [x for row in view["layers"][l]["heads"][h]["weights"] for x in row]
        assert list(values) == expected, (l, h)
        assert head["steps"][names.index("weights")]["operands"] == [["exp", "ij"], ["row_sum", "i0"]]
PY
# A BERT-base-shaped model (12 layers × 12 heads, d_model 768, random weights) on 20 tokens:
# its page stays under 5 MB.
for l in 0 1 2 3 4 5 6 7 8 9 10 11; do "$T" random --n 20 --d-model 768 --heads 12 --dk 64 --seed $((l * 10)) -o "base$(printf %02d "$l").json"; done
"$T" view base*.json --dtype f32 --format html > base.html
expect_exit 0 "" -- python3 -c "import os; size = os.path.getsize('base.html'); assert 3_000_000 < size <= 5_000_000, size"
expect_exit 0 "" -- grep -c 'data-layer="11" data-head="11"' base.html
# The page's title: what the files' titles share ("random problem, seed 0", "…, seed 10", …).
expect_exit 0 "^<title>attn-trace view: random problem</title>$" -- grep -o "<title>.*</title>" base.html
finish
