# what: `[ ]` on NODE_RANK: the API on rank 0, headless on rank 1
# reader: agrees
# rank 0 serves the API; the follower joins headless
if [ "$NODE_RANK" = 0 ]; then
  vllm serve "$MODEL" --tensor-parallel-size 2 --port 8000
else
  vllm serve "$MODEL" --tensor-parallel-size 2 --headless
fi
