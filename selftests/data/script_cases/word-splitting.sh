# what: a multi-line quoted variable split into words; a quoted one kept whole
# reader: agrees
ARGS="--tensor-parallel-size 2
  --max-num-seqs 8"
EXTRA='--enforce-eager'
vllm serve org/m $ARGS $EXTRA "$QUOTED"
