# what: JSON in single and double quotes, a dotted `-cc.` argument
# reader: agrees
vllm serve org/m \
  --compilation-config '{"cudagraph_mode": "FULL_DECODE_ONLY"}' \
  --default-chat-template-kwargs "{\"enable_thinking\": false}" \
  -cc.cudagraph_mode=FULL_DECODE_ONLY
