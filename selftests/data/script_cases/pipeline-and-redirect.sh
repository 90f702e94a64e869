# what: `vllm serve ... 2>&1 | tee`
# reader: agrees
vllm serve org/m --port 8000 2>&1 | tee "$LOG_DIR/vllm.log"
