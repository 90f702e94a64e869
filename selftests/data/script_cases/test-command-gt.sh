# what: `test ... -gt` deciding a variable used unquoted (empty: no word)
# reader: agrees
if test "$NODE_RANK" -gt 0; then HEADLESS=--headless; fi
vllm serve org/m $HEADLESS --data-parallel-size 1
