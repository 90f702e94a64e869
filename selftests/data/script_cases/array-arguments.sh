# what: a bash array spread into the arguments
# reader: agrees
ARGS=(--tensor-parallel-size 2 --port 8000)
vllm serve org/m "${ARGS[@]}"
