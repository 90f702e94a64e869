# what: a function that runs vLLM
# reader: refuses a function that runs vLLM or sets variables cannot be followed
serve() { vllm serve org/m "$@"; }
serve --port 8000
