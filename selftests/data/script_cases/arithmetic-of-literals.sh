# what: arithmetic of literals and variables decides arguments (a capture size, a port)
# reader: agrees
BASE=8000
SIZES=$(( 12 * (5 + 1) ))
vllm serve org/m --port $(( BASE + NODE_RANK * 10 )) --max-num-seqs "$SIZES" --max-num-batched-tokens $(( 1 << 13 ))
