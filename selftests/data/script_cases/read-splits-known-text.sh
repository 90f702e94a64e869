# what: `IFS=, read -ra` and `read a b` of a here-string split as bash splits them; `echo | xargs` trims
# reader: agrees
IFS=',' read -ra NODES <<< "10.0.0.1, 10.0.0.2,10.0.0.3,"
read -r first rest <<< "  org/m  the rest  "
host=$(echo "  ${NODES[1]} " | xargs)
vllm serve "$first" --host "$host" --served-model-name "${NODES[2]}" --api-key "$rest" --max-num-seqs "${#NODES[@]}"
