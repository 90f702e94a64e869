# what: `${#NAME}` is the value's length
# reader: agrees
vllm serve org/m --seed ${#MODEL} --max-num-seqs "${#EMPTY}"
