# what: a guard on a variable the container does not have: bash stops there with the message
# reader: refuses NOT_SET_ANYWHERE is not set, so bash stops here \(set NOT_SET_ANYWHERE in .env\)
: "${NOT_SET_ANYWHERE:?set NOT_SET_ANYWHERE in .env}"
vllm serve org/m
