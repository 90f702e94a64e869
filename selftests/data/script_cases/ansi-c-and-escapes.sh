# what: `$'...'` with escapes and a tab in an argument
# reader: agrees
SEP=$'\t'
vllm serve org/m --chat-template-content-format "string" --served-model-name "a${SEP}b" $'--port\x3d8000'
