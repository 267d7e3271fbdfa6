# tools/setup.sh's own options (docs/README.md#dependencies): --check names missing
# packages (exit 1) or none (exit 0); an unknown argument prints the usage, exit 2,
# before anything is installed or built.
source "$SOURCE_DIR/tests/cli/lib.sh"
expect_exit 2 "bash tools/setup.sh --check +name the packages" -- bash "$SOURCE_DIR/tools/setup.sh" --chek
checks=$((checks + 1))
output=$(bash "$SOURCE_DIR/tools/setup.sh" --check 2>&1)
case $? in
  0) [ -z "$output" ] || fail "--check printed '$output' with every package installed" ;;
  1) grep -q "^missing packages: " <<<"$output" || fail "--check exited 1 without naming the packages: '$output'" ;;
  *) fail "--check exited with neither 0 nor 1: '$output'" ;;
esac
finish
