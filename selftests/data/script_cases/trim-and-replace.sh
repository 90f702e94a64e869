# what: prefix and suffix trimming and replacement build the served name
# reader: agrees
FULL=org/m-FP8
NAME=${FULL##*/}
NAME=${NAME%-*}
vllm serve "$FULL" --served-model-name "${NAME/m/model}" --port "${PORT:0:2}00"
