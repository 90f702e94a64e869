# what: `&>` under sh: dash reads `cmd &` then `> file`
# reader: agrees
# shell: sh
vllm serve org/m --port 8000 &> /tmp/vllm.log
