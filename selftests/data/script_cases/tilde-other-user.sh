# what: `~name` is a user's home in the image, which the reader cannot see
# reader: defers the home directory `~vllm` of a user
vllm serve org/m --download-dir ~vllm/models
