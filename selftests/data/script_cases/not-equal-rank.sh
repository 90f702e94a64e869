# what: `!=` in `[ ]`
# reader: agrees
if [ "$NODE_RANK" != "0" ]; then
  vllm serve org/m --headless
else
  vllm serve org/m --port 8000
fi
