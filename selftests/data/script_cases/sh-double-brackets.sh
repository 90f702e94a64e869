# what: `[[ ]]` under sh: dash has no `[[`, the test fails and rank 0 takes the headless branch
# reader: refuses line 4: `\[\[ ... \]\]` is bash's, and this script runs under sh
# shell: sh
if [[ $NODE_RANK == 0 ]]; then
  exec vllm serve org/m --port 8000
else
  exec vllm serve org/m --headless
fi
