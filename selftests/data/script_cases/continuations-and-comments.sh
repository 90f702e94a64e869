# what: backslash continuations, comments with apostrophes
# reader: agrees
# the worker doesn't serve the API: it's headless
vllm serve org/m \
  --tensor-parallel-size 2 \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.7  # don't go higher: the OS needs room
