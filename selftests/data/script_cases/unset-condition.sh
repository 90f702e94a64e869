# what: a condition on a variable the container does not have
# reader: agrees
if [ -n "$NOT_SET_ANYWHERE" ]; then
  vllm serve org/a
else
  vllm serve org/b
fi
