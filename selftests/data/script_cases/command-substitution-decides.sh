# what: a command substitution decides an argument
# reader: refuses the command substitution `\$\(cat /etc/port\)` decides an argument of `vllm serve`
vllm serve org/m --port "$(cat /etc/port)"
