# what: a file on the node chooses between two models: the model is decided at start, the rest is not
# reader: defers depends on
if [ -d /models/local-copy ]; then M=/models/local-copy; else M=org/m; fi
vllm serve "$M" --port 8000
