# what: a bash array spread into the arguments
# reader: refuses cannot read the shell word `\(--tensor-parallel-size 2 --port 8000\)` \(array\)
ARGS=(--tensor-parallel-size 2 --port 8000)
vllm serve org/m "${ARGS[@]}"
