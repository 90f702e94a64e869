# what: `${A//x/y}` and other rewriting expansions
# reader: refuses cannot follow the expansion `\$\{MODEL//o/0\}`
vllm serve "${MODEL//o/0}"
