# what: `set -euo pipefail`, `cd` before `exec`
# reader: agrees
set -euo pipefail
cd "$WORKDIR"
exec vllm serve org/m --port 8000
