# what: a command substitution inside a word decides an argument
# reader: defers the command substitution `\$\(cat /etc/port\)`
vllm serve org/m --port=$(cat /etc/port)
