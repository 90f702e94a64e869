# what: an array grows by conditions, then is spread quoted
# reader: agrees
args=(org/m --port "$PORT")
[ "$NODE_RANK" != 0 ] && args+=(--headless)
[ -n "$DEBUG" ] && args+=(--max-model-len "$(( 4096 * 2 ))")
vllm serve "${args[@]}"
