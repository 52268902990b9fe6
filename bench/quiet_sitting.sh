#!/bin/sh
# The figures of docs/performance.md, in one sitting on a quiet machine: the broker benchmark with
# both peers (5 rounds), then this tree's broker and 7cec5c1's alternately against the mock (the 1 KiB produce
# comparison), each run's output kept in OUT (default: a new temporary directory).
# Usage: bench/quiet_sitting.sh [OUT]   (from the repository root; PYTHON overrides the interpreter)
set -eu
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${1:-$(mktemp -d -t kcli-quiet-XXXXXX)}
BEFORE=7cec5c1
mkdir -p "$OUT"
OLD=$(mktemp -d -t kcli-tree-$BEFORE-XXXXXX)
git worktree add --detach "$OLD" "$BEFORE" >/dev/null
trap 'git worktree remove --force "$OLD"' EXIT
PYTHONPATH=$PWD "$PYTHON" bench/broker.py | tee "$OUT/broker.txt"
for round in 1 2; do
    PYTHONPATH=$PWD "$PYTHON" bench/broker.py --rounds 2 --no-tansu --kcli-tree "$PWD" | tee "$OUT/now-$round.txt"
    "$PYTHON" bench/broker.py --rounds 2 --no-tansu --kcli-tree "$OLD" | tee "$OUT/$BEFORE-$round.txt"
done
echo "outputs in $OUT"
