# what: `exec` in the rank-1 branch replaces the shell: the command after `fi` never runs there
# reader: agrees
set -euo pipefail
if [ "${NODE_RANK}" = "1" ]; then
  exec vllm serve "${MODEL}" --node-rank "${NODE_RANK}" --headless
fi
exec vllm serve "${MODEL}" --node-rank "${NODE_RANK}" --port 20001
