# what: `read` from a file on the node decides an argument
# reader: defers TOKENS, read at line 3
read -r TOKENS < /etc/max_tokens
vllm serve org/m --max-model-len "$TOKENS"
