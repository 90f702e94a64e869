#!/usr/bin/env bash
# sim/deploy/compose.yml's deployment written as a Ray launcher (./ray.sh head | ./ray.sh worker HEAD_IP),
# the way community launchers start a pair with Ray: the same container, the same environment; the head's
# container starts Ray and vllm serve with the Ray executor (no --nnodes, --node-rank or master address:
# Ray places the ranks), the worker's only joins Ray. Written for the simulated cluster and the self-tests.
set -euo pipefail

ROLE=${1:-}
IMAGE=vllm/vllm-openai:qwen38-flash-next
MODEL_ID=Qwen/Qwen3.8-Flash-Next-FP8
IFACE=enp1s0f0np0
case "$ROLE" in
  head) RANK=0; HOST_IP=169.254.94.252 ;;
  worker) RANK=1; HOST_IP=169.254.159.206; HEAD_IP=${2:?usage: $0 worker HEAD_IP} ;;
  *) echo "usage: $0 head | worker HEAD_IP" >&2; exit 2 ;;
esac
container=(
  --network host --ipc host --restart no
  --device /dev/infiniband:/dev/infiniband --cap-add IPC_LOCK
  --ulimit memlock=-1 --ulimit stack=67108864 --memory 105g
  -v /home/lenovo/vllm/huggingface:/root/.cache/huggingface
  -e MASTER_ADDR=169.254.94.252 -e MASTER_PORT=29501
  -e NCCL_SOCKET_FAMILY=AF_INET -e GLOO_SOCKET_FAMILY=AF_INET
  -e NCCL_SOCKET_IFNAME=$IFACE -e GLOO_SOCKET_IFNAME=$IFACE -e TP_SOCKET_IFNAME=$IFACE
  -e GLOO_USE_LIBUV=0 -e TORCH_GLOO_USE_LIBUV=0
  -e NCCL_IB_DISABLE=0 -e "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0" -e NCCL_IB_GID_INDEX=3
  -e NCCL_IB_MERGE_NICS=1 -e NCCL_IB_ROCE_VERSION_NUM=2 -e NCCL_NET_PLUGIN=none -e NCCL_CUMEM_ENABLE=0
  -e HF_HUB_OFFLINE=1 -e MODEL_ID="$MODEL_ID" -e NODE_RANK="$RANK" -e VLLM_HOST_IP="$HOST_IP"
)
docker rm -f vllm-qwen38 >/dev/null 2>&1 || true
if [ "$ROLE" = head ]; then
  docker run -d --name vllm-qwen38 "${container[@]}" --entrypoint /bin/bash "$IMAGE" -c \
    "ray start --head --port=6379 --node-ip-address=$HOST_IP && exec vllm serve $MODEL_ID --served-model-name qwen3.8-flash-next --tensor-parallel-size 2 --distributed-executor-backend ray --distributed-timeout-seconds 3600 --gpu-memory-utilization 0.80 --max-model-len 262144 --max-num-seqs 8 -cc.mode=0 -cc.cudagraph_mode=FULL_DECODE_ONLY --host 0.0.0.0 --port 20001 --enable-prefix-caching --reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser qwen3_xml"
else
  docker run -d --name vllm-qwen38 "${container[@]}" --entrypoint /bin/bash "$IMAGE" -c \
    "ray start --block --address=$HEAD_IP:6379 --node-ip-address=$HOST_IP"
fi
