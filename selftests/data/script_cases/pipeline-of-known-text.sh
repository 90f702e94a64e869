# what: a pipeline inside $(...) whose stages the reader knows (echo into cat) gives the text itself
# reader: agrees
MODEL=$(echo org/m | cat)
PORT=$(printf 8000 | cat | cat)
vllm serve "$MODEL" --port "$PORT"
