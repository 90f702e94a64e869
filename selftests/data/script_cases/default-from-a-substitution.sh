# what: a default that is a command substitution decides an argument when the variable is unset
# reader: defers the command substitution `\$\(hostname -I\)`
vllm serve org/m --host "${UNSET_HOST:-$(hostname -I)}"
