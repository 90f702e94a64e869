# what: `case` on NODE_RANK with alternatives and a default
# reader: agrees
case "$NODE_RANK" in
  0) exec vllm serve org/m --port 8000 ;;
  1|2) exec vllm serve org/m --headless ;;
  *) echo "unknown rank" ;;
esac
