# what: `echo "$MODEL" | grep -qiE ...` on a value the reading knows is decided, not forked
# reader: agrees
EXTRA=""
if echo "${MODEL}" | grep -qiE "(gpt-oss|mixtral|ORG/M)"; then
  EXTRA="--enable-expert-parallel"
fi
if echo "${MODEL}" | grep -qx "org"; then
  EXTRA="$EXTRA --wrong"
fi
vllm serve "$MODEL" $EXTRA
