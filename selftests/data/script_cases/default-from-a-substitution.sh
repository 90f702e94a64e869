# what: a default that is a command substitution decides an argument when the variable is unset
# reader: refuses the command substitution `\$\(hostname -I\)` decides an argument of `vllm serve`
vllm serve org/m --host "${UNSET_HOST:-$(hostname -I)}"
