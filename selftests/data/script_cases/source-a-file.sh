# what: `source` sets what a file in the image says
# reader: refuses `source /opt/vllm/env.sh` sets what a file inside the image says
source /opt/vllm/env.sh
vllm serve "$MODEL"
