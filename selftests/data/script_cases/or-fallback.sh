# what: `vllm serve ... || echo`: the fallback never runs vLLM
# reader: agrees
vllm serve org/m --port 8000 || echo "vllm exited"
