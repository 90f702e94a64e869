# what: a command substitution decides an argument
# reader: defers the command substitution `\$\(cat /etc/port\)` \(line 3\)
vllm serve org/m --port "$(cat /etc/port)"
