# what: `[[ ]]` under sh: dash has no `[[`, the test fails and rank 0 takes the headless branch
# reader: agrees
# note: `\[\[ \.\.\. \]\]` is bash's; under sh `\[\[` is a command that is not found
# shell: sh
if [[ $NODE_RANK == 0 ]]; then
  exec vllm serve org/m --port 8000
else
  exec vllm serve org/m --headless
fi
