# what: the older entry point `python3 -m vllm.entrypoints.openai.api_server --model`
# reader: agrees
exec python3 -m vllm.entrypoints.openai.api_server --model org/m --port 8000
