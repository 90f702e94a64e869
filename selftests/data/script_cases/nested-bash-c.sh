# what: the script starts another bash with -c, passing arguments
# reader: agrees
export NCCL_DEBUG=WARN
bash -c 'exec vllm serve "$1" --port "$2"' launcher org/m "$PORT"
