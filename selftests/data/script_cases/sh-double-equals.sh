# what: `==` in `[ ]` under sh: dash's test refuses it, the condition is false on every rank
# reader: agrees
# note: `==` inside `\[ \]` is bash's; under sh test says 'unexpected operator'
# shell: sh
if [ "$NODE_RANK" == 0 ]; then vllm serve org/m --port 8000; else vllm serve org/m --headless; fi
