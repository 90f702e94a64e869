# what: `: "${NAME:?message}"` guards, and a condition of two tests joined by && and ||, and `!`
# reader: agrees
: "${NODE_RANK:?NODE_RANK must be set in .env}"
: "${MODEL?}"
if [ "$NODE_RANK" = 0 ] && [ -n "$MODEL" ]; then
  ROLE=api
elif ! [ "$NODE_RANK" = 1 ] || test -z "$MODEL"; then
  ROLE=odd
else
  ROLE=worker
fi
vllm serve "$MODEL" --served-model-name "$ROLE"
