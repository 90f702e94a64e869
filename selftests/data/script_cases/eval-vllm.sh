# what: `eval` builds the command at run time
# reader: refuses `eval` builds the vLLM command at run time
CMD="vllm serve org/m"
eval "$CMD --port 8000"
