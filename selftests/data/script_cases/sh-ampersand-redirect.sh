# what: `&>` under sh: dash reads `cmd &` then `> file`
# reader: refuses `&>` \(sh runs the command in the background and empties the file\)
# shell: sh
vllm serve org/m --port 8000 &> /tmp/vllm.log
