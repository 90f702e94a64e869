# what: getopts parses the launcher's options
# reader: agrees
# arguments: ["launch.sh", "-t", "2", "-h"]
HEADLESS=""
while getopts "t:h" opt; do
  case $opt in
    t) TP=$OPTARG ;;
    h) HEADLESS=--headless ;;
  esac
done
vllm serve org/m --tensor-parallel-size "$TP" $HEADLESS
