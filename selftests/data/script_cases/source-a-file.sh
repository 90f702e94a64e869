# what: `source` sets what a file in the image says
# reader: agrees
# note: `source /opt/vllm/env.sh` reads a file the suite did not read: what it sets is decided at start
source /opt/vllm/env.sh
vllm serve "$MODEL"
