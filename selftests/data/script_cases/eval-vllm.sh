# what: `eval` builds the command at run time
# reader: agrees
CMD="vllm serve org/m"
eval "$CMD --port 8000"
