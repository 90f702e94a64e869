# what: `exec env NAME=value nohup vllm serve`: wrappers around the launch
# reader: agrees
exec env NCCL_IB_DISABLE=0 GLOO_SOCKET_IFNAME=enp1s0f0np0 nohup vllm serve org/m --port 8000
