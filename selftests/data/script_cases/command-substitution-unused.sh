# what: a command substitution that decides nothing vLLM gets
# reader: agrees
STAMP=$(date +%s)
echo "started at $STAMP"
vllm serve org/m --port 8000
