# what: vLLM started in the background, then `wait`
# reader: agrees
vllm serve org/m --port 8000 &
wait
