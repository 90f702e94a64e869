# what: a script written for sh (`sh -c`, dash here as in vLLM's Ubuntu-based images)
# reader: agrees
# shell: sh
set -eu
case "${NODE_RANK:-}" in
  1) exec vllm serve "$MODEL" --headless ;;
esac
if [ "$NODE_RANK" = 0 ] && [ -n "${PORT:-}" ]; then
  exec vllm serve "$MODEL" --port "$PORT"
fi
exec vllm serve "$MODEL"
