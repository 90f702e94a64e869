# what: bash's brace expansion before every other: a wait loop over {1..N}, lists and sequences in words
# reader: agrees
TRIES=0
for i in {1..12}; do
  TRIES=$((TRIES + i % 5))
done
HOSTS=""
for h in node{1,2}-ib {a..c}; do HOSTS="$HOSTS,$h"; done
vllm serve org/m --tag "$TRIES$HOSTS" --pad {08..10} --lit "{1..3}" x\{a,b\} {solo} --steps {1..9..4}
