# what: `echo ... && exec vllm serve`
# reader: agrees
echo "starting rank $NODE_RANK" && exec vllm serve org/m --port 8000
