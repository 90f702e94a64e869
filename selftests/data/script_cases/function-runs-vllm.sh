# what: a function that runs vLLM
# reader: agrees
serve() { vllm serve org/m "$@"; }
serve --port 8000
