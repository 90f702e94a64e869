# what: `printf -v`, `declare -x` and `${X^^}` prepare the environment and arguments
# reader: agrees
printf -v PORTARG -- "--port=%d" "$PORT"
declare -x VLLM_LOGGING_LEVEL=INFO
mode=full_decode_only
vllm serve org/m "$PORTARG" -cc.cudagraph_mode="${mode^^}"
