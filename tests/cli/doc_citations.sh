# The citation checker (docs/README.md#citing-the-contract) fails on what it guards:
# a cited file or heading that does not exist, a citation of a document outside the
# repository, and a tree where it finds no citation at all. Run on a small copy.
source "$SOURCE_DIR/tests/cli/lib.sh"
mkdir -p tree/tools tree/docs tree/src
cp "$SOURCE_DIR/tools/check_doc_citations.py" tree/tools/
printf '# Title\n\n## The n² chart — `run` (and ≠ more)\n\nSee [below](#title) and [there](./OTHER.md#x).\n' > tree/docs/README.md
printf '# Other\n\n## X\n' > tree/docs/OTHER.md
check() { python3 tree/tools/check_doc_citations.py; }

echo '// cites docs/README.md#the-n-chart--run-and--more, GitHub'"'"'s anchor' > tree/src/a.cpp
expect_exit 0 "3 citations of docs/, 0 bad" -- check
echo '// cites docs/README.md#the-n²-chart' > tree/src/a.cpp
expect_exit 1 "src/a.cpp:1: docs/README.md has no heading with the anchor #the-n²-chart" -- check
echo '// cites docs/NOPE.md' > tree/src/a.cpp
expect_exit 1 "src/a.cpp:1: docs/NOPE.md does not exist" -- check
echo '// as SP''EC §4 says' > tree/src/a.cpp
expect_exit 1 "src/a.cpp:1: cites a document outside the repository" -- check
printf '# Title\n' > tree/docs/README.md
printf '# Other\n' > tree/docs/OTHER.md
echo '// nothing cited' > tree/src/a.cpp
expect_exit 1 "0 citations of docs/, 0 bad" -- check
finish
