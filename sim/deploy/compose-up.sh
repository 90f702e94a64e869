#!/bin/sh
# Start this node's rank with the compose, its rank set in the launcher's shell (Compose interpolates
# ${NODE_RANK} over the .env's): ./launch.sh RANK. Written for the simulated cluster.
[ $# -eq 1 ] || { echo "usage: $0 RANK" >&2; exit 2; }
cd {folder} || exit 1
NODE_RANK=$1 docker compose --env-file .env up -d vllm
