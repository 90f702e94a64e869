# what: `(( NODE_RANK == 0 ))` chooses the branch
# reader: agrees
if (( NODE_RANK == 0 )); then
  vllm serve org/m --port 8000
else
  vllm serve org/m --headless
fi
