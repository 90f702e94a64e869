# what: backslash escapes, `'\''`, escapes in double quotes, `$'...'`
# reader: agrees
vllm serve org/m --served-model-name a\ b --chat-template "x\$y" 'it'\''s' "tab\there" $'c\td'
