# what: `${A//x/y}` and other rewriting expansions
# reader: agrees
vllm serve "${MODEL//o/0}"
