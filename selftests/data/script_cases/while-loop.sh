# what: a restart loop around vLLM
# reader: refuses a while/until loop that runs vLLM or sets variables cannot be followed
while true; do vllm serve org/m; sleep 5; done
