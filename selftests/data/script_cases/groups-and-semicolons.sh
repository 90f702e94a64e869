# what: `{ ...; }` groups, `;`, `export NAME` after its value
# reader: agrees
{ export A=1; B=2; }; C=3; export C
vllm serve org/m --served-model-name "m-$A-$B-$C"
