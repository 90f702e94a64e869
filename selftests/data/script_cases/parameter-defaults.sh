# what: `${A:-x}`, `${A-x}`, `${A:+x}` on set, empty and unset variables
# reader: agrees
vllm serve "${MODEL:-org/default}" --port "${PORT:-8000}" ${DEBUG:+--enforce-eager} ${UNSET_FLAG:+--headless} \
  --host ${HOST-0.0.0.0} --max-model-len "${EMPTY:-4096}" --seed "${EMPTY-7}"
