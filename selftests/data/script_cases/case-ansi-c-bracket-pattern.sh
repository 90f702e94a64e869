# what: a `case` pattern with `$'...'` inside a bracket expression (tree-sitter-bash could not parse it)
# reader: agrees
EXTRA=" --enforce-eager"
case "$EXTRA" in
  *[!$' \t']*) FLAGS=$EXTRA ;;
  *) FLAGS="" ;;
esac
vllm serve org/m $FLAGS
