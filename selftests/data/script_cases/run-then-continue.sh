# what: without `exec`, the script goes on after vLLM exits (a second `vllm serve` does run then)
# reader: agrees
if [ "$NODE_RANK" = 1 ]; then
  vllm serve org/m --headless
fi
vllm serve org/m --port 8000
