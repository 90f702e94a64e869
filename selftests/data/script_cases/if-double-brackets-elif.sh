# what: `[[ ]]` with -eq and ==, elif and else
# reader: agrees
if [[ $NODE_RANK -eq 0 ]]; then
  ROLE=head
elif [[ $NODE_RANK == 1 ]]; then
  ROLE=worker
else
  ROLE=none
fi
vllm serve org/m --served-model-name "$ROLE"
