# what: a condition on a variable the container does not have
# reader: refuses NOT_SET_ANYWHERE is not in the container's environment
if [ -n "$NOT_SET_ANYWHERE" ]; then
  vllm serve org/a
else
  vllm serve org/b
fi
