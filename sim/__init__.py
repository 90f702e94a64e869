"""The simulated GB10 cluster: network namespaces with real sshd, fake sysfs and stub tools."""
