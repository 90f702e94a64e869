# what: a restart loop around vLLM
# reader: agrees
# bash: restart-loop
# note: runs the same commands again each time they end \(a restart loop\)
while true; do vllm serve org/m; sleep 5; done
