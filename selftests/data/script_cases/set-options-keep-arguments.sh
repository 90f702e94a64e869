# what: `set -euo pipefail` (an option's name joined after -o) keeps the script's arguments; a usage guard on $# passes
# reader: agrees
# arguments: ["start.sh", "1", "9100"]
set -euo pipefail
set -o errexit +o xtrace
usage() { echo "usage: $0 RANK PORT" >&2; exit 2; }
[ $# -eq 2 ] || usage
vllm serve org/m --node-rank "$1" --port "$2"
