"""The deployment and its launch plan: compose, the launch scripts (the bash reader), NCCL's environment."""
