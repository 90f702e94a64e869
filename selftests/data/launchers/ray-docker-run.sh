#!/usr/bin/env bash
# a Ray launcher of our own, as community launchers start a pair: ./launch.sh head | ./launch.sh worker HEAD_IP
set -euo pipefail
ROLE=$1
IMAGE=vllm/vllm-openai:qwen38-flash-next
IFACE=enp1s0f0np0
common=(--network host --ipc host --device /dev/infiniband:/dev/infiniband --cap-add IPC_LOCK
  --ulimit memlock=-1 -v /home/lenovo/vllm/huggingface:/root/.cache/huggingface
  -e NCCL_SOCKET_IFNAME=$IFACE -e GLOO_SOCKET_IFNAME=$IFACE -e "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0")
if [ "$ROLE" = head ]; then
  docker run -d --name vllm-qwen38 "${common[@]}" -e VLLM_HOST_IP=169.254.94.252 --entrypoint /bin/bash "$IMAGE" -c \
    "ray start --head --port=6379 && vllm serve Qwen/Qwen3.8-Flash-Next-FP8 --served-model-name qwen3.8-flash-next --tensor-parallel-size 2 --distributed-executor-backend ray --host 0.0.0.0 --port 20001 --reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser qwen3_xml --max-model-len 262144"
else
  HEAD_IP=$2
  docker run -d --name vllm-qwen38 "${common[@]}" -e VLLM_HOST_IP=169.254.159.206 --entrypoint /bin/bash "$IMAGE" -c \
    "ray start --block --address=$HEAD_IP:6379"
fi
