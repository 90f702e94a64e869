"""Reading the nodes: the transport, the snapshot and its probes, the parsers, what the suite runs on a
node (bandwidth, the collective) and what a cluster is found to be."""
