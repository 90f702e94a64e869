# what: `export A=1 B` before B has a value, local variables, `NAME=value vllm`
# reader: agrees
export NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0 NCCL_DEBUG
NCCL_DEBUG=INFO
LOCAL_ONLY=1
export NCCL_IB_GID_INDEX=3
VLLM_LOGGING_LEVEL=DEBUG vllm serve org/m --port 8000
