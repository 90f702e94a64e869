# what: the script writes an env file with a here-document, then sources it
# reader: agrees
cat > "$WORKDIR/run.env" <<EOT
export SERVED=org-m-$NODE_RANK
export NCCL_IB_HCA==rocep1s0f0
EOT
. "$WORKDIR/run.env"
vllm serve org/m --served-model-name "$SERVED"
