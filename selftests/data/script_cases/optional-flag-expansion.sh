# what: `${VAR:+--flag $VAR}` adds an option only when its variable is set
# reader: agrees
vllm serve org/m ${PORT:+--port $PORT} ${EMPTY:+--api-key $EMPTY} ${DEBUG:+--enforce-eager}
