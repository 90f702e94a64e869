# what: `unset` of an exported variable, a variable reassigned
# reader: agrees
export NCCL_DEBUG=INFO
unset NCCL_DEBUG
MODEL=org/override
vllm serve "$MODEL"
