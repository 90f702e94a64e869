# what: `python3 -c` with nested quotes before the launch, its output unused
# reader: agrees
python3 -c "import json, os; print(json.dumps({'rank': os.environ.get(\"NODE_RANK\", '0'), 'ok': \"yes\"}))" > /dev/null
python3 -c 'import sys; sys.exit(0 if "a" in "abc" else 1)' && vllm serve org/m --port "$PORT"
