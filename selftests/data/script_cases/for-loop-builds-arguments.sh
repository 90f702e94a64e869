# what: a for loop over literal words builds the arguments
# reader: agrees
ARGS=""
for flag in --enable-prefix-caching --trust-remote-code; do
  ARGS="$ARGS $flag"
done
vllm serve org/m $ARGS
