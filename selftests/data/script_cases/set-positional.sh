# what: `set --` builds the argument list, "$@" spreads it
# reader: agrees
set -- org/m --port "$PORT"
if [ "$NODE_RANK" -ge 1 ]; then set -- "$@" --headless; fi
vllm serve "$@"
