# what: sh (dash) has no brace expansion: the braces stay as written
# reader: agrees
# shell: sh
vllm serve org/m --tag {1..2} --list a{b,c}
