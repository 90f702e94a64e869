# what: eval of a command assembled from known parts, with quotes inside
# reader: agrees
OPTS="--served-model-name 'my model' --port $PORT"
eval "vllm serve org/m $OPTS"
