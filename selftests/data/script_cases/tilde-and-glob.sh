# what: a leading `~` is HOME; a glob that matches nothing stays as written
# reader: agrees
vllm serve org/m --download-dir ~/models --chat-template /templates/*.jinja
