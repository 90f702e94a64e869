# what: a launcher's own argument parsing (while/case/shift) decides the arguments
# reader: agrees
# arguments: ["start.sh", "--rank", "1", "--port", "9100", "--eager"]
EAGER=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rank) RANK="$2"; shift 2 ;;
    --port) P="$2"; shift 2 ;;
    --eager) EAGER=--enforce-eager; shift ;;
    *) echo "unknown $1"; exit 1 ;;
  esac
done
vllm serve org/m --node-rank "$RANK" --port "$P" $EAGER
