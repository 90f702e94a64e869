# what: `bash -c 'exec vllm serve "$@"' NAME ARGS`: the compose command's words become the arguments
# reader: agrees
# arguments: ["vllm-entry", "org/m", "--tensor-parallel-size", "2", "--served-model-name", "two words"]
echo "$0 starting with $# arguments, model $1"
exec vllm serve "$@" --port "${PORT:-8000}" --seed "${7:-0}"
