# what: `vllm serve ... || echo`: the fallback never runs vLLM
# reader: refuses `\|\| vllm serve` runs only when the command before it fails
vllm serve org/m --port 8000 || echo "vllm exited"
