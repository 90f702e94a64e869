# what: `exit` after vLLM in a branch ends the script there
# reader: agrees
case "$NODE_RANK" in
  1) vllm serve org/m --headless; exit $? ;;
esac
vllm serve org/m --port 8000
