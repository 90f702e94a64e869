# what: `~name` is a user's home in the image, which the reader cannot see
# reader: refuses the home directory `~vllm` of a user in the image decides an argument
vllm serve org/m --download-dir ~vllm/models
