# what: a function with locals and a return status decides the arguments
# reader: agrees
role() {
  local r="$1"
  if [ "$r" = 0 ]; then echo leader; return 0; fi
  echo follower
  return 0
}
ROLE=$(role "$NODE_RANK")
if [ "$ROLE" = follower ]; then
  set -- --headless
fi
vllm serve org/m "$@"
