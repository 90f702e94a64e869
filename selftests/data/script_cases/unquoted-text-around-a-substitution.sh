# what: an unquoted variable made of known words and a command substitution splits its known words
# reader: defers the command substitution `\$\(hostname\)` \(line 3\)
ARGS="--host 0.0.0.0 --served-model-name $(hostname) --max-num-seqs 8"
vllm serve org/m $ARGS
