# what: a pipeline of what the reader knows inside $(...) gives its last stage's output; an unknown one defers
# reader: defers the command substitution `\$\(hostname -I \| cut -d' ' -f1\)`
MODEL=$(echo org/m | cat)
vllm serve "$MODEL" --host "$(hostname -I | cut -d' ' -f1)"
