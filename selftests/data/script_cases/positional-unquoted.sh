# what: unquoted `$@`, `$*` and `$1` split again at whitespace
# reader: agrees
# arguments: ["_", "org/m", "--served-model-name", "two words"]
vllm serve $1 $*
vllm serve $@
